"""Finding the installed Wireshark and putting the nrsack plugin and profile where it looks.

Everything comes from tshark itself: its version (`tshark --version`), its folders (`tshark -G
folders`: personal and global plugin, Lua plugin and configuration folders) and what it loads
(`tshark -G plugins`). The C plugin is built against the headers of exactly that version
(WiresharkConfigVersion.cmake of wireshark-dev), else the Lua plugin is installed.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nrsack

# Releases the plugin suites run against (make test: 4.0 natively, 4.4 and 4.6 in chroots).
TESTED_RELEASES = ("4.0", "4.4", "4.6")
PROFILE_NAME = "nrsack"
# Marks a profile folder as ours, so uninstall never removes a user's own "nrsack" profile.
PROFILE_MARK = ".installed-by-nrsack"
CMAKE_CONFIG_GLOBS = ("/usr/lib/*/wireshark/cmake/WiresharkConfigVersion.cmake",
                      "/usr/lib/*/cmake/wireshark/WiresharkConfigVersion.cmake",
                      "/usr/local/lib*/cmake/wireshark/WiresharkConfigVersion.cmake",
                      "/usr/local/lib*/wireshark/cmake/WiresharkConfigVersion.cmake")


class InstallError(Exception):
    """A problem the user can act on; the command prints it as one line and exits 2."""


@dataclass
class Wireshark:
    tshark: str
    version: str            # "4.0.17"
    folders: dict           # `tshark -G folders` name -> path

    @property
    def release(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def tested(self) -> bool:
        return self.release in TESTED_RELEASES

    def scope_folders(self, system: bool) -> dict:
        """The C plugin's epan folder, the Lua plugin folder and the profiles folder of one scope."""
        kind = "Global" if system else "Personal"
        conf = self.folders["Global configuration" if system else "Personal configuration"]
        return {"c": Path(self.folders[f"{kind} Plugins"]) / "epan",
                "lua": Path(self.folders[f"{kind} Lua Plugins"]),
                "profiles": Path(conf) / "profiles"}


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def find_wireshark(tshark: str | None = None) -> Wireshark:
    path = shutil.which(tshark or "tshark")
    if not path:
        raise InstallError(f"{tshark} is not an executable tshark" if tshark else
                           "tshark not found on PATH (Debian/Ubuntu: apt-get install tshark)")
    m = re.search(r"TShark \(Wireshark\) (\d+\.\d+\.\d+)", _run([path, "--version"]).stdout)
    if not m:
        raise InstallError(f"could not read the version of {path} (tshark --version)")
    folders = {}
    for line in _run([path, "-G", "folders"]).stdout.splitlines():
        name, sep, value = line.partition(":")
        if sep and value.strip():
            folders.setdefault(name.strip(), value.strip())  # the first of repeated names (MaxMind)
    needed = ["Personal Plugins", "Global Plugins", "Personal Lua Plugins", "Global Lua Plugins",
              "Personal configuration", "Global configuration"]
    missing = [n for n in needed if n not in folders]
    if missing:
        raise InstallError(f"{path} -G folders does not name {', '.join(missing)}")
    return Wireshark(path, m.group(1), folders)


def check_tested(ws: Wireshark, force: bool) -> None:
    if not ws.tested and not force:
        raise InstallError(f"Wireshark {ws.version} is untested (tested: {', '.join(TESTED_RELEASES)}); "
                           "--force installs anyway")


def headers_version() -> str | None:
    """The version of the installed Wireshark development files (wireshark-dev), or None."""
    for pattern in CMAKE_CONFIG_GLOBS:
        for config in glob.glob(pattern):
            m = re.search(r'set\(PACKAGE_VERSION "([\d.]+)"\)', Path(config).read_text())
            if m:
                return m.group(1)
    return None


SOURCE_MARKERS = {"dissector": "CMakeLists.txt", "lua": "nrsack.lua", "core": "nrsack_core.h"}


def source_dir(name: str) -> Path:
    """dissector/, lua/ or core/: package data beside this file once installed (nrsack.wireshark.dissector,
    .lua; nrsack.core beside nrsack.wireshark), the clone's top-level folder in an editable install."""
    here = Path(__file__).resolve().parent
    for folder in (here / name, here.parent / name):
        if (folder / SOURCE_MARKERS[name]).is_file():
            return folder
    package = "nrsack.core" if name == "core" else f"nrsack.wireshark.{name}"
    raise InstallError(f"the package has no {package} data (reinstall nrsack)")


def profile_source() -> Path:
    return Path(__file__).resolve().parent / "profile"


def choose_kind(ws: Wireshark, kind: str | None) -> str:
    """"c" when asked for or when the headers of exactly this version and cmake are present, else "lua"."""
    if kind == "lua":
        return "lua"
    have = headers_version()
    usable = have == ws.version and shutil.which("cmake") and (shutil.which("cc") or shutil.which("gcc"))
    if kind == "c" and not usable:
        why = ("no Wireshark development files (apt-get install wireshark-dev)" if have is None
               else f"the development files are for {have}, tshark is {ws.version}" if have != ws.version
               else "cmake or a C compiler is missing (apt-get install cmake gcc)")
        raise InstallError(f"cannot build the C plugin: {why}; use --lua for the Lua plugin")
    return "c" if usable else "lua"


def build_c_plugin(build_dir: Path) -> Path:
    src = source_dir("dissector")
    steps = [["cmake", "-S", str(src), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
              f"-DNRSACK_VERSION={nrsack.__version__}", f"-DNRSACK_CORE_DIR={source_dir('core')}"],
             ["cmake", "--build", str(build_dir), "-j", "2"]]
    for step in steps:
        proc = _run(step)
        if proc.returncode:
            last = ((proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[-1]
            raise InstallError(f"building the C plugin failed ({' '.join(step[:2])}): {last}")
    return build_dir / "nrsack.so"


def _place(source: Path, folder: Path, name: str, mode: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    # write beside and rename: a running Wireshark keeps the old file, never sees half a new one
    part = folder / f".{name}.part"
    shutil.copyfile(source, part)
    os.chmod(part, mode)
    os.replace(part, target)
    return target


def install_profile(profiles: Path) -> Path:
    target = profiles / PROFILE_NAME
    if target.exists() and not (target / PROFILE_MARK).exists():
        raise InstallError(f"{target} exists and was not installed by nrsack; rename it or remove it first")
    target.mkdir(parents=True, exist_ok=True)
    for f in profile_source().iterdir():
        if f.is_file():
            _place(f, target, f.name, 0o644)
    (target / PROFILE_MARK).write_text("")
    return target


def install(ws: Wireshark, kind: str, system: bool) -> list[str]:
    """Installs the plugin of `kind` and the profile into one scope; returns what was done, one line each."""
    where = ws.scope_folders(system)
    done = []
    if kind == "c":
        with tempfile.TemporaryDirectory(prefix="nrsack-build-") as build:
            so = build_c_plugin(Path(build))
            done.append(f"C plugin built for Wireshark {ws.version} -> {_place(so, where['c'], 'nrsack.so', 0o755)}")
    else:
        lua = source_dir("lua") / "nrsack.lua"
        done.append(f"Lua plugin -> {_place(lua, where['lua'], 'nrsack.lua', 0o644)}")
    # One plugin per scope: the other kind from an earlier install would only be a second copy.
    other = where["lua"] / "nrsack.lua" if kind == "c" else where["c"] / "nrsack.so"
    if other.exists():
        other.unlink()
        done.append(f"removed the {'Lua' if kind == 'c' else 'C'} plugin installed before: {other}")
    done.append(f"profile \"{PROFILE_NAME}\" -> {install_profile(where['profiles'])}")
    return done


def uninstall(ws: Wireshark, system: bool) -> list[str]:
    where = ws.scope_folders(system)
    done = []
    for f in (where["c"] / "nrsack.so", where["lua"] / "nrsack.lua"):
        if f.exists():
            f.unlink()
            done.append(f"removed {f}")
    profile = where["profiles"] / PROFILE_NAME
    if (profile / PROFILE_MARK).exists():
        shutil.rmtree(profile)
        done.append(f"removed profile {profile}")
    return done


def loaded_plugins(ws: Wireshark) -> list[str]:
    """The nrsack lines of `tshark -G plugins`: what this user's tshark actually loads."""
    out = _run([ws.tshark, "-G", "plugins"]).stdout
    return [line for line in out.splitlines() if line.startswith("nrsack.")]


def status(ws: Wireshark) -> tuple[list[str], list[str]]:
    """(report lines, warnings)."""
    lines = [f"tshark: {ws.tshark}, Wireshark {ws.version} "
             f"({'tested' if ws.tested else 'untested: tested are ' + ', '.join(TESTED_RELEASES)})",
             f"development files: {headers_version() or 'none (the C plugin cannot be built; Lua works)'}"]
    installed_lua = False
    for system in (False, True):
        where = ws.scope_folders(system)
        found = [str(f) for f in (where["c"] / "nrsack.so", where["lua"] / "nrsack.lua") if f.exists()]
        installed_lua |= (where["lua"] / "nrsack.lua").exists()
        profile = where["profiles"] / PROFILE_NAME
        if profile.is_dir():
            found.append(f"profile {profile}")
        lines.append(f"{'system' if system else 'user'}: {', '.join(found) or 'nothing installed'}")
    loaded = loaded_plugins(ws)
    lines.append("tshark -G plugins: " + ("; ".join(" ".join(line.split()) for line in loaded) or "no nrsack plugin loaded"))
    warnings = []
    if os.geteuid() == 0:
        warnings.append("running as root: tshark ignores personal plugin folders as root, and Wireshark 4.4 and "
                        "later load no Lua plugin at all as root; run tshark as your own user")
        if installed_lua and not any("nrsack.lua" in line for line in loaded):
            warnings.append("the Lua plugin is installed but this root tshark does not load it")
    return lines, warnings
