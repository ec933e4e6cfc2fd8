"""bench/benchlib.py: what the benchmark drivers share."""
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import benchlib  # noqa: E402

# lscpu on an AMD EPYC under KVM (abridged: the lines the drivers read and their neighbours).
LSCPU = """Architecture:                            x86_64
CPU(s):                                  2
Vendor ID:                               AuthenticAMD
Model name:                              AMD EPYC
CPU family:                              25
Flags:                                   fpu vme sse sse2 avx avx2 fma avx512f avx512_bf16 avx512_vnni
Hypervisor vendor:                       KVM
"""

# /proc/cpuinfo's first processor on an Intel Xeon with AMX.
CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse sse2 avx avx2 avx512f amx_bf16 amx_tile amx_int8

processor\t: 1
model name\t: another
"""


class SettingsTest(unittest.TestCase):
    def test_unset_and_empty_take_the_default_as_bash_did(self):
        with mock.patch.dict(os.environ, {"PAIRS": ""}):
            self.assertEqual(benchlib.setting("PAIRS", "3"), "3")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(benchlib.int_setting("PAIRS", 3), 3)
        with mock.patch.dict(os.environ, {"PAIRS": "5"}):
            self.assertEqual(benchlib.int_setting("PAIRS", 3), 5)

    def test_a_setting_that_is_no_number_names_itself(self):
        with mock.patch.dict(os.environ, {"PAIRS": "three"}):
            with self.assertRaises(SystemExit) as raised:
                benchlib.int_setting("PAIRS", 3)
        self.assertIn("PAIRS=three", str(raised.exception))


class OrderTest(unittest.TestCase):
    def test_two_contestants_take_turns_going_first(self):
        tools = ["mgpr", "multigpu_raster"]
        self.assertEqual([benchlib.reversed_every_other(tools, pair) for pair in (1, 2, 3)],
                         [["mgpr", "multigpu_raster"], ["multigpu_raster", "mgpr"], ["mgpr", "multigpu_raster"]])

    def test_three_contestants_reverse_in_even_pairs(self):
        tools = ["mgpr", "mgpr2", "multigpu_raster"]
        self.assertEqual(benchlib.reversed_every_other(tools, 2), ["multigpu_raster", "mgpr2", "mgpr"])
        self.assertEqual(tools, ["mgpr", "mgpr2", "multigpu_raster"], "the caller's list is left alone")

    def test_rotation_puts_each_shape_in_each_place_once_in_three_rounds(self):
        shapes = ["1x1", "1x2", "2x1"]
        rounds = [benchlib.rotated(shapes, number) for number in (1, 2, 3)]
        self.assertEqual(rounds, [["1x2", "2x1", "1x1"], ["2x1", "1x1", "1x2"], ["1x1", "1x2", "2x1"]])
        for place in range(3):
            self.assertEqual(sorted(order[place] for order in rounds), sorted(shapes))

    def test_rotation_takes_a_dict_by_its_keys(self):
        self.assertEqual(benchlib.rotated({"a": 1, "b": 2}, 1), ["b", "a"])


class FiguresTest(unittest.TestCase):
    def test_median_of_odd_and_even_counts(self):
        self.assertEqual(benchlib.median([7.909, 4.622, 6.987]), 6.987)
        self.assertAlmostEqual(benchlib.median([1.0, 4.0, 2.0, 3.0]), 2.5)
        with self.assertRaises(ValueError):
            benchlib.median([])

    def test_rate_is_rounded_as_printed(self):
        self.assertEqual(benchlib.rate(64, 8.82), 7.256)

    def test_the_precision_auto_chose_from_mgprs_banner(self):
        banner = ("#   64 tiles of 512 px, model builtin:resnet50 on cpu in bf16 (auto: native amx_bf16), autocast, "
                  "channels-last, frozen")
        self.assertEqual(benchlib.auto_precision("# mgpr 0.9.0 rank 0 of 1\n" + banner + "\n"), "bf16")
        self.assertEqual(benchlib.auto_precision(
            "#   16 tiles of 1024 px, model m.pt on cpu in fp32 (auto: this CPU has no native bf16)"), "fp32")
        self.assertIsNone(benchlib.auto_precision("#   16 tiles of 1024 px, model m.pt on cpu in fp32, channels-last"))

    def test_tiles_of_adds_every_ranks_summary(self):
        with tempfile.TemporaryDirectory() as folder:
            ranks = Path(folder)
            for rank, tiles in ((0, 512), (1, 511)):
                (ranks / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "status": "ok", "tiles": tiles}))
            (ranks / "job.json").write_text("{}")
            self.assertEqual([s["rank"] for s in benchlib.rank_summaries(ranks)], [0, 1])
            self.assertEqual(benchlib.tiles_of(ranks), 1023)


class CpuTest(unittest.TestCase):
    def test_lscpu(self):
        cpu = benchlib.parse_lscpu(LSCPU)
        self.assertEqual(cpu.name, "AMD EPYC")
        self.assertIn("avx2", cpu.flags)
        self.assertTrue(cpu.native_bf16)

    def test_cpuinfo_reads_the_first_processor(self):
        cpu = benchlib.parse_cpuinfo(CPUINFO)
        self.assertEqual(cpu.name, "Intel(R) Xeon(R) Processor")
        self.assertTrue(cpu.native_bf16)

    def test_avx2_alone_is_no_native_bf16(self):
        self.assertFalse(benchlib.parse_lscpu(LSCPU.replace(" avx512_bf16", "")).native_bf16)

    def test_this_machine(self):
        cpu = benchlib.this_cpu()
        self.assertTrue(cpu.name)
        self.assertTrue(cpu.flags, "lscpu or /proc/cpuinfo gives the flags")
        self.assertRegex(benchlib.describe_cpu(), r", [0-9]+ CPUs$")


class RunTimedTest(unittest.TestCase):
    def test_wall_time_status_and_the_childs_own_peak_memory(self):
        run = benchlib.run_timed([sys.executable, "-c",
                                  "import time; block = bytearray(64 << 20); time.sleep(0.2)"])
        self.assertTrue(run.ok)
        self.assertGreaterEqual(run.wall_s, 0.2)
        self.assertLess(run.wall_s, 10)
        self.assertGreaterEqual(run.peak_rss_kib, 64 << 10)

    def test_a_failing_program_and_its_output_in_files(self):
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            run = benchlib.run_timed([sys.executable, "-c", "import sys; print('tiles'); sys.exit('mgpr: error: no')"],
                                     stdout=out, stderr=err)
            self.assertEqual(run.returncode, 1)
            self.assertFalse(run.ok)
            self.assertEqual(out.read_text(), "tiles\n")
            self.assertEqual(benchlib.last_lines(err, 1), ["mgpr: error: no"])

    def test_environment_changes_and_removals(self):
        with mock.patch.dict(os.environ, {"LD_LIBRARY_PATH": "/old"}):
            self.assertNotIn("LD_LIBRARY_PATH", benchlib.environment(LD_LIBRARY_PATH=None))
            self.assertEqual(benchlib.environment(MGPR_LOG_DIR=Path("/r"))["MGPR_LOG_DIR"], "/r")

    def test_output_of_a_missing_program_is_empty(self):
        self.assertEqual(benchlib.output_of(["/nonexistent/mgpr", "--version"]), "")
        self.assertFalse(benchlib.succeeds(["/nonexistent/python", "-c", "pass"]))
        self.assertTrue(benchlib.succeeds([sys.executable, "-c", "pass"]))


if __name__ == "__main__":
    unittest.main()
