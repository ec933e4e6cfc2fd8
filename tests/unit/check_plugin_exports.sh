#!/usr/bin/env bash
# The plugin is loaded into srun, sbatch and slurmstepd: it may export only Slurm's entry
# points (anything else could clash with their symbols) and must not pull in LibTorch or
# GDAL (login nodes have neither, and slurmstepd should stay small).
set -u
plugin=$1
rc=0
extra=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -Ev '^(slurm_spank_[a-z_]+|plugin_(name|type|version))$')
if [ -n "$extra" ]; then echo "exported beyond the SPANK entry points:"; echo "$extra"; rc=1; fi
heavy=$(ldd "$plugin" | grep -Ei 'torch|c10|gdal|cuda|nccl')
if [ -n "$heavy" ]; then echo "heavy dependencies:"; echo "$heavy"; rc=1; fi
[ $rc = 0 ] && echo "exports: $(nm -D --defined-only "$plugin" | awk '{print $3}' | paste -sd' ')"
exit $rc
