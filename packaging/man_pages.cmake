# Manual pages, section 1, made by help2man from each program's own --help and --version
# (so they cannot drift from the options) plus docs/man/<program>.h2m (name, examples,
# files, exit status, see also); gzip -9n as Debian wants them. Installed with the
# program's component, so a source install and the Debian packages both carry them.
# Without help2man (or when cross-compiling: the programs must run here) there are none.
find_program(MGPR_HELP2MAN help2man)
if(NOT MGPR_HELP2MAN OR CMAKE_CROSSCOMPILING)
  message(STATUS "mgpr: no manual pages (help2man not found; scripts/install-deps installs it)")
  return()
endif()
find_program(MGPR_GZIP gzip REQUIRED)
set(man_dir ${CMAKE_BINARY_DIR}/man)
set(man_pages)
foreach(program_component mgpr:runtime mgpr-test-image:runtime mgpr-submit:launcher mgpr-logs:launcher)
  string(REPLACE ":" ";" pair ${program_component})
  list(GET pair 0 program)
  list(GET pair 1 component)
  if(NOT TARGET ${program})
    continue()
  endif()
  set(include_file ${PROJECT_SOURCE_DIR}/docs/man/${program}.h2m)
  set(page ${man_dir}/${program}.1)
  # --no-discard-stderr: CLI11 prints --help to stdout, but a refusal would go to stderr
  # and must not pass for a page.
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
    COMMAND ${MGPR_HELP2MAN} --no-info --no-discard-stderr --section=1 --include=${include_file}
            --output=${page} $<TARGET_FILE:${program}>
    COMMAND ${MGPR_GZIP} -9nf ${page}
    DEPENDS ${program} ${include_file}
    COMMENT "Manual page ${program}(1)"
    VERBATIM)
  list(APPEND man_pages ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${man_pages})
