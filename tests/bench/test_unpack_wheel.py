"""scripts/unpack_wheel.py: the one way wheels are unpacked (scripts/fetch-libtorch,
scripts/build-torch2)."""
import io
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import unpack_wheel  # noqa: E402

PROGRAM = REPO / "scripts/unpack_wheel.py"
# scripts/fetch-libtorch's patterns.
KEEP_TORCH = r"^torch/(include/.*|lib/(libtorch_cpu|libc10|libgomp[^/]*)\.so[^/]*)$"
KEEP_NVIDIA = r"^nvidia/[^/]+/lib/lib[^/]+\.so[^/]*$"
KEEP_VISION = r"^vision-[0-9.]+/(LICENSE|torchvision/csrc/(macros\.h|ops/[^/]+\.(cpp|h)|ops/(cpu|autograd)/[^/]+))$"


def files_under(folder: Path):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


class UnpackTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = Path(self.folder.name)
        self.wheel = self.root / "torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl"
        with zipfile.ZipFile(self.wheel, "w") as wheel:
            wheel.writestr("torch/", "")
            wheel.writestr("torch/include/c10/core/Device.h", "// header")
            wheel.writestr("torch/lib/libtorch_cpu.so", "cpu")
            wheel.writestr("torch/lib/libc10.so", "c10")
            wheel.writestr("torch/lib/libgomp-a34b3233.so.1", "gomp")
            wheel.writestr("torch/lib/libtorch_cuda.so", "cuda: not for a CPU build")
            wheel.writestr("torch/share/cmake/Torch/TorchConfig.cmake", "cmake")
            wheel.writestr("torch/__init__.py", "python")
            wheel.writestr("torch-2.7.0.dist-info/METADATA", "Requires-Dist: nvidia-nccl-cu12==2.26.2")
        self.tarball = self.root / "pytorch-vision_0.14.1.orig.tar.gz"
        with tarfile.open(self.tarball, "w:gz") as tar:
            for name, text in (("vision-0.14.1/LICENSE", "BSD"), ("vision-0.14.1/setup.py", "setup"),
                               ("vision-0.14.1/torchvision/csrc/macros.h", "macros"),
                               ("vision-0.14.1/torchvision/csrc/ops/nms.cpp", "nms"),
                               ("vision-0.14.1/torchvision/csrc/ops/cpu/nms_kernel.cpp", "kernel"),
                               ("vision-0.14.1/torchvision/csrc/ops/cuda/nms_kernel.cu", "cuda")):
                info = tarfile.TarInfo(name)
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text.encode()))
            link = tarfile.TarInfo("vision-0.14.1/torchvision/csrc/ops/cpu/link.h")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(link)

    def tearDown(self):
        self.folder.cleanup()

    def test_fetch_libtorchs_members_of_a_wheel(self):
        dest = self.root / "out"
        self.assertEqual(unpack_wheel.unpack(self.wheel, dest, [KEEP_TORCH, KEEP_NVIDIA]), 4)
        self.assertEqual(files_under(dest), ["torch/include/c10/core/Device.h", "torch/lib/libc10.so",
                                             "torch/lib/libgomp-a34b3233.so.1", "torch/lib/libtorch_cpu.so"])
        self.assertEqual((dest / "torch/lib/libc10.so").read_text(), "c10")

    def test_build_torch2s_prefixes_match_from_the_start_of_the_name(self):
        dest = self.root / "out"
        unpack_wheel.unpack(self.wheel, dest, ["torch/(include|lib|share/cmake)/"])
        self.assertIn("torch/share/cmake/Torch/TorchConfig.cmake", files_under(dest))
        self.assertIn("torch/lib/libtorch_cuda.so", files_under(dest))
        self.assertNotIn("torch/__init__.py", files_under(dest))

    def test_everything_without_keep(self):
        dest = self.root / "out"
        self.assertEqual(unpack_wheel.unpack(self.wheel, dest), 8)
        self.assertIn("torch-2.7.0.dist-info/METADATA", files_under(dest))

    def test_a_tarball_with_its_top_folder_stripped_and_no_links(self):
        dest = self.root / "torchvision-ops"
        unpack_wheel.unpack(self.tarball, dest, [KEEP_VISION], strip=1)
        self.assertEqual(files_under(dest), ["LICENSE", "torchvision/csrc/macros.h",
                                             "torchvision/csrc/ops/cpu/nms_kernel.cpp",
                                             "torchvision/csrc/ops/nms.cpp"])

    def test_a_member_outside_the_folder_is_refused(self):
        evil = self.root / "evil.whl"
        with zipfile.ZipFile(evil, "w") as wheel:
            wheel.writestr("torch/../../escaped", "no")
        with self.assertRaises(ValueError):
            unpack_wheel.unpack(evil, self.root / "out")
        self.assertFalse((self.root / "escaped").exists())

    def test_the_command_line(self):
        dest = self.root / "out"
        done = subprocess.run([sys.executable, PROGRAM, self.wheel, dest, "--keep", KEEP_TORCH], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(len(files_under(dest)), 4)
        done = subprocess.run([sys.executable, PROGRAM, self.wheel, dest, "--keep", "^nothing/"], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("nothing in", done.stderr)
        done = subprocess.run([sys.executable, PROGRAM, self.root / "missing.whl", dest], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("missing.whl", done.stderr)


if __name__ == "__main__":
    unittest.main()
