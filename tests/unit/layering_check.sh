#!/usr/bin/env bash
# The runtime's stages depend on each other in one direction only: each folder of
# runtime/ (its subfolders included) may include its own headers, common/'s (mgpr/...)
# and those of the folders listed for it here, which are also the libraries its
# CMakeLists.txt links. A new include across stages fails this check until the map (and
# docs/architecture.md) says so. The configuration (mgpr/config.hpp) reaches app/ only:
# app/ resolves it into the run plan, and each stage receives its own small options.
set -u
runtime=$1
declare -A allowed=(
  [geometry]=""
  [gdal]=""
  [source]="geometry gdal"
  [resume]="geometry"
  [writers]="geometry gdal"
  [model]=""
  [distributed]="geometry gdal source resume"
  [pipeline]="geometry gdal source model"
  [crops]="geometry gdal source model pipeline"
  [tasks]="geometry gdal source resume writers model pipeline crops"
  [stream]="geometry gdal source resume writers model pipeline distributed crops tasks"
  [app]="geometry gdal source resume writers model pipeline distributed crops tasks stream"
)
# Only the stage that makes the run plan reads the configuration.
configuration_readers=" app "
status=0
for dir in "$runtime"/*/; do
  stage=$(basename "$dir")
  if [ -z "${allowed[$stage]+set}" ]; then
    echo "FAIL: runtime/$stage is not in the stage map of $0"; status=1; continue
  fi
  while IFS=: read -r file included; do
    if [ "$included" = "mgpr/config.hpp" ]; then
      case $configuration_readers in
        *" $stage "*) ;;
        *) echo "FAIL: ${file#"$runtime"/} includes mgpr/config.hpp: only app/ reads the configuration; take the stage's own options from the run plan"; status=1 ;;
      esac
      continue
    fi
    folder=${included%%/*}
    case " $stage mgpr ${allowed[$stage]} " in
      *" $folder "*) ;;
      *) echo "FAIL: ${file#"$runtime"/} includes $included: $stage may use only ${allowed[$stage]:-no other stage}"; status=1 ;;
    esac
  done < <(find "$dir" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
             xargs -0 grep -o '#include "[^"]*/[^"]*"' /dev/null | sed 's/#include "//; s/"$//')
done
[ $status = 0 ] && echo "ok: every runtime stage includes only the stages below it, and only app/ the configuration"
exit $status
