# Debian packages, built by `cpack -G DEB` in the build folder (tests/package checks
# them with lintian and installs them):
#
#   mgpr          the runtime (mgpr, mgpr-test-image)           component runtime
#   mgpr-launcher mgpr-submit, mgpr-logs, the job template       component launcher
#   mgpr-spank    the SPANK plugin where Debian's Slurm looks     component plugin_deb
#                 for plugins, and an /etc/slurm/plugstack.conf.d
#                 snippet (a conffile, commented out)
#
# Installed under /usr whatever CMAKE_INSTALL_PREFIX is: mgpr-submit finds the template
# beside its own binary (../share/mgpr/templates). Dependencies come from dpkg-shlibdeps;
# the plugin's from the Slurm release it was built against.
set(MGPR_DEB_DIR ${CMAKE_CURRENT_LIST_DIR}/debian)
set(MGPR_DEB_STAGE ${CMAKE_BINARY_DIR}/packaging)

# Debian's Slurm looks for plugins in /usr/lib/<multiarch>/slurm-wlm (its PluginDir).
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(MGPR_DEB_PLUGIN_DIR lib/${CMAKE_LIBRARY_ARCHITECTURE}/slurm-wlm)
else()
  set(MGPR_DEB_PLUGIN_DIR lib/slurm-wlm)
endif()
set(PLUGIN_PATH /usr/${MGPR_DEB_PLUGIN_DIR}/mgpr.so)

# The Slurm release series the plugin was built against (22.05 for 0x160508): Slurm
# loads only plugins of its own series, so the package may only go beside that series.
file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h slurm_version_line REGEX "^#define SLURM_VERSION_NUMBER ")
string(REGEX MATCH "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])" _ "${slurm_version_line}")
math(EXPR slurm_major "0x${CMAKE_MATCH_1}")
math(EXPR slurm_minor "0x${CMAKE_MATCH_2}")
math(EXPR slurm_next_minor "${slurm_minor} + 1")
set(SLURM_SERIES ${slurm_major}.${slurm_minor})
if(slurm_minor LESS 10)
  set(SLURM_SERIES ${slurm_major}.0${slurm_minor})
endif()
set(slurm_next ${slurm_major}.${slurm_next_minor})
if(slurm_next_minor LESS 10)
  set(slurm_next ${slurm_major}.0${slurm_next_minor})
endif()

configure_file(${MGPR_DEB_DIR}/mgpr.conf ${MGPR_DEB_STAGE}/mgpr.conf @ONLY)
configure_file(${MGPR_DEB_DIR}/README.Debian ${MGPR_DEB_STAGE}/README.Debian @ONLY)
# Debian wants the changelog compressed, without a time stamp (gzip -n), at most.
find_program(MGPR_GZIP gzip REQUIRED)
execute_process(COMMAND ${MGPR_GZIP} -9nc ${MGPR_DEB_DIR}/changelog OUTPUT_FILE ${MGPR_DEB_STAGE}/changelog.gz
                COMMAND_ERROR_IS_FATAL ANY)

install(TARGETS mgpr_spank LIBRARY DESTINATION ${MGPR_DEB_PLUGIN_DIR} COMPONENT plugin_deb EXCLUDE_FROM_ALL)
install(FILES ${MGPR_DEB_STAGE}/mgpr.conf DESTINATION /etc/slurm/plugstack.conf.d COMPONENT plugin_deb
        EXCLUDE_FROM_ALL)
install(FILES ${MGPR_DEB_STAGE}/README.Debian DESTINATION share/doc/mgpr-spank COMPONENT plugin_deb
        EXCLUDE_FROM_ALL)
foreach(component_package runtime:mgpr launcher:mgpr-launcher plugin_deb:mgpr-spank)
  string(REPLACE ":" ";" pair ${component_package})
  list(GET pair 0 component)
  list(GET pair 1 package)
  install(FILES ${MGPR_DEB_DIR}/copyright ${MGPR_DEB_STAGE}/changelog.gz DESTINATION share/doc/${package}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME ${package})
  set(CPACK_DEBIAN_${upper}_FILE_NAME DEB-DEFAULT)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mgpr)
set(CPACK_PACKAGE_VENDOR "the mgpr developers")
set(CPACK_PACKAGE_CONTACT "mgpr developers <mgpr-developers@lists.example.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime launcher plugin_deb)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(CPACK_DEBIAN_PLUGIN_DEB_PACKAGE_SECTION admin)
# Debian's extended descriptions: a summary line, then lines indented by CPack.
# The runtime links Debian's LibTorch, which is built for the CPU only: the package says
# so, and where a GPU runtime comes from (scripts/bundle, docs/install.md).
string(CONCAT CPACK_COMPONENT_RUNTIME_DESCRIPTION
       "deep-learning models over large rasters, in tiles (CPU-only runtime)\n"
       "mgpr reads rasters in tiles with GDAL, shards the tiles over ranks, runs a\n"
       "TorchScript model with LibTorch and writes georeferenced results (GeoPackage,\n"
       "GeoTIFF, CSV) with a per-rank summary. Also mgpr-test-image.\n"
       ".\n"
       "This runtime is CPU-only: it links Debian's LibTorch, which is built without\n"
       "CUDA, so it runs no model on a GPU. For GPU nodes, install mgpr's relocatable\n"
       "bundle instead (a tarball built by the project's scripts/bundle against\n"
       "PyTorch's CUDA LibTorch, carrying its libraries; see the project's\n"
       "docs/install.md), and use the bundle's mgpr-submit.")
string(CONCAT CPACK_COMPONENT_LAUNCHER_DESCRIPTION
       "submit mgpr runs to Slurm and read their logs\n"
       "mgpr-submit renders a job script with one task per GPU on every node and\n"
       "submits it; mgpr-logs turns the ranks' summaries into a table.\n"
       ".\n"
       "Jobs run the mgpr installed beside mgpr-submit: with the mgpr package, the\n"
       "CPU-only runtime. For GPU jobs use the mgpr-submit of mgpr's relocatable\n"
       "bundle (see the mgpr package's description).")
string(CONCAT CPACK_COMPONENT_PLUGIN_DEB_DESCRIPTION
       "Slurm SPANK plugin giving each task its rank and one GPU\n"
       "The plugin adds --mgpr options to srun and sbatch, gives every task the\n"
       "torchrun-style rank environment and one GPU, refuses a step whose geometry\n"
       "cannot work, and ends steps whose ranks deadlock or stall. Installed off:\n"
       "see /usr/share/doc/mgpr-spank/README.Debian.")
# The plugstack.conf.d snippet is a conffile: the administrator's edits survive upgrades.
file(WRITE ${MGPR_DEB_STAGE}/plugin-control/conffiles "/etc/slurm/plugstack.conf.d/mgpr.conf\n")
set(CPACK_DEBIAN_PLUGIN_DEB_PACKAGE_CONTROL_EXTRA ${MGPR_DEB_STAGE}/plugin-control/conffiles)
set(CPACK_DEBIAN_PLUGIN_DEB_PACKAGE_DEPENDS "slurm-client (>= ${SLURM_SERIES}), slurm-client (<< ${slurm_next})")
set(CPACK_DEBIAN_LAUNCHER_PACKAGE_RECOMMENDS "slurm-client, mgpr-spank")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# The packages depend on Debian's LibTorch (dpkg-shlibdeps finds libtorch1.13). A build
# against another LibTorch (the default build's PyTorch wheel, build-torch2's CUDA wheel)
# would make a runtime that finds LibTorch by a run path into this machine's out/ or
# build folders, which no installed system has: cpack refuses there, saying what to do,
# before it installs or writes anything (tests/package: package.cpack_refuses_*).
set(MGPR_LIBTORCH_FROM_DEBIAN OFF)
set(MGPR_LIBTORCH_LOCATION "${MGPR_LIBTORCH_CPU_DIR}")
if(NOT MGPR_LIBTORCH_CPU_DIR AND TORCH_LIBRARY)
  get_filename_component(MGPR_LIBTORCH_LOCATION "${TORCH_LIBRARY}" REALPATH)
  if(MGPR_LIBTORCH_LOCATION MATCHES "^/usr/lib/")
    set(MGPR_LIBTORCH_FROM_DEBIAN ON)
  endif()
endif()
if(NOT MGPR_LIBTORCH_FROM_DEBIAN)
  set(MGPR_CPACK_BUILD_DIR ${CMAKE_BINARY_DIR})
  configure_file(${MGPR_DEB_DIR}/refuse_cpack.cmake.in ${MGPR_DEB_STAGE}/refuse_cpack.cmake @ONLY)
  set(CPACK_PROJECT_CONFIG_FILE ${MGPR_DEB_STAGE}/refuse_cpack.cmake)
endif()
include(CPack)
