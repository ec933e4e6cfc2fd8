"""bench/many-rasters' own logic: where the tiles go, the banner line that ends start-up,
and the medians and ratio of its summary (the runs themselves need GDAL and mgpr)."""
import importlib.machinery
import importlib.util
import subprocess
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[1].parent


def load_driver():
    loader = importlib.machinery.SourceFileLoader("many_rasters", str(REPO / "bench/many-rasters"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


many = load_driver()


class ManyRastersTest(unittest.TestCase):
    def test_raster_i_sits_where_tile_i_of_the_one_raster_does(self):
        self.assertEqual(many.tile_origin(0, 400, 50), many.ORIGIN)
        self.assertEqual(many.tile_origin(51, 400, 50), (many.ORIGIN[0] + 200.0, many.ORIGIN[1] - 200.0))
        self.assertEqual(many.one_raster_shape(2000, 50), (50, 40))
        self.assertEqual(many.one_raster_shape(30, 50), (30, 1))

    def test_start_up_ends_at_the_banners_rasters_line(self):
        self.assertTrue(many.is_rasters_line("#   10000 rasters, 1600.0 Mpx, from a.tif to b.tif; 1 CRS\n"))
        self.assertTrue(many.is_rasters_line("#   raster one.tif: 20000x80000 px, 3 bands (Byte)\n"))
        self.assertFalse(many.is_rasters_line("#   10000 tiles of 400 px, model m.pt\n"))
        self.assertFalse(many.is_rasters_line("# mgpr 0.1.0 | rank   0/2 | rasters, \n"))

    def test_the_summary_gives_medians_and_the_ratio_against_the_goal(self):
        results = """# count layout round wall_s startup_s tiles peak_rss_mib
2000 rasters 1 12.0 8.0 2000 500
2000 one 1 5.0 1.0 2000 560
2000 one 2 6.0 nan 2000 540
2000 rasters 2 14.0 9.0 2000 520
10000 rasters 1 13.0 6.0 10000 700
10000 one 1 9.0 1.5 10000 900
"""
        lines = many.summary_lines(many.parse_results(results))
        self.assertEqual(lines[2], "2000 2 2000 | 13.00 5.50 2.36x | 8.50 1.00 | 510 550 | not met")
        self.assertEqual(lines[3], "10000 1 10000 | 13.00 9.00 1.44x | 6.00 1.50 | 700 900 | met")

    def test_it_explains_itself(self):
        done = subprocess.run([REPO / "bench/many-rasters", "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(done.returncode, 0)
        self.assertIn("usage: bench/many-rasters", done.stdout)
        self.assertIn("settings (environment):", done.stdout)


if __name__ == "__main__":
    unittest.main()
