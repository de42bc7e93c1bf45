"""The Lua plugin stays within what every Wireshark from 4.0 on offers.

- It parses as Lua 5.2 (Wireshark 4.0), which rejects 5.3's `//` and native bit operators.
- Its arithmetic bit library (for builds that ship neither bit32 nor Wireshark's `bit`) agrees with
  bit32 on random operands.
- Loaded with bit32 and bit removed, the plugin gives the same output as with them (the MPTCP
  captures hash keys into tokens with those operations, so a wrong fallback would lose the joined
  subflow).
"""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import tshark
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark

REPO = tshark.REPO
SCRIPT = LUA_PLUGIN.path

BIT_CHECK = r"""
local src = assert(io.open(arg[1])):read("*a")
local chunk = assert(src:match("(local TWO32 = .-\nend\n)local bitlib"), "arithmetic_bitlib not found")
local lib = assert(load(chunk .. "\nreturn arithmetic_bitlib()"))()
math.randomseed(7)
for _ = 1, 20000 do
  local a, b, c = math.random(0, 4294967295), math.random(0, 4294967295), math.random(0, 4294967295)
  local n = math.random(0, 31)
  assert(lib.band(a, b) == bit32.band(a, b) and lib.bor(a, b) == bit32.bor(a, b))
  assert(lib.bxor(a, b, c) == bit32.bxor(a, b, c) and lib.bnot(a) == bit32.bnot(a))
  assert(lib.lshift(a, n) == bit32.lshift(a, n) and lib.rshift(a, n) == bit32.rshift(a, n), n)
end
print("ok")
"""


def test_parses_as_lua_52():
    proc = subprocess.run(["luac5.2", "-p", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_arithmetic_bit_library_agrees_with_bit32(tmp_path):
    check = tmp_path / "bitcheck.lua"
    check.write_text(BIT_CHECK)
    proc = subprocess.run(["lua5.2", str(check), str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.parametrize("name", ["mptcp-v0-narrow", "mptcp-v1-wide", "tcp-rules-wrap"])
def test_same_output_without_bit_libraries(name, vector_pcaps):
    # tshark runs as nobody: the wrapper must sit where it can read it (pytest's tmp_path is 0700)
    folder = Path(tempfile.mkdtemp(prefix="nrsack-lua-compat-"))
    folder.chmod(0o755)
    wrapper = folder / "nrsack_without_bit.lua"
    wrapper.write_text(f'bit32 = nil\nbit = nil\ndofile("{SCRIPT}")\n')
    wrapper.chmod(0o644)
    try:
        fallback = tshark.golden_output(vector_pcaps[name], tshark.Plugin.lua(wrapper), sndbuf=3000)
    finally:
        shutil.rmtree(folder)
    plain = tshark.golden_output(vector_pcaps[name], LUA_PLUGIN, sndbuf=3000)
    assert fallback == plain
    assert tshark.parse_golden(plain).expert, "the capture raised nothing: a vacuous comparison"


def test_steps_aside_when_the_c_plugin_is_loaded(nrsack_c_plugin):
    pcap = REPO / "sample-pcaps" / "tcp-nrsack-fig2.pcap"
    args = ["-T", "fields", "-e", "nrsack.stream", "-e", "nrsack.rtxq.bytes"]
    c_only = tshark.run_tshark(args, nrsack_c_plugin, pcap=pcap)
    both = tshark.run_tshark(["-X", f"lua_script:{SCRIPT}", *args], nrsack_c_plugin, pcap=pcap)
    assert "Lua Error" not in both.stderr and "the Lua plugin stays inactive" in both.stderr
    assert both.stdout == c_only.stdout and "1000" in both.stdout
