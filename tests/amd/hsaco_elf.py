"""A reader of what an hsaco (an AMDGPU code object: a shared ELF64) says about itself, written from the ELF and
AMDGPU code-object specifications for the tests, independent of the compiler: the ELF header (machine, OS ABI,
code-object version, the arch in ``e_flags``), the symbols, and the ``NT_AMDGPU_METADATA`` note (MessagePack) with
the kernels' names and kernarg segments.  The compiler's own metadata comes from the assembly text's
``.amdgpu_metadata`` block (tritium_amd.hsaco.kernel_metadata); the tests hold the two against each other."""
import struct

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ELFABIVERSION_AMDGPU_HSA_V5 = 3
NT_AMDGPU_METADATA = 32
SHT_SYMTAB, SHT_NOTE, SHT_DYNSYM = 2, 7, 11
# EF_AMDGPU_MACH_* (the low byte of e_flags), for the arches the tests compile for
MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F, "gfx1100": 0x41, "gfx1200": 0x48}


def unpack_msgpack(buf: bytes, pos: int = 0):
    """One MessagePack value at ``pos`` -> (value, next position)."""
    b = buf[pos]
    pos += 1

    def take(fmt):
        (v,) = struct.unpack_from(">" + fmt, buf, pos)
        return v, pos + struct.calcsize(fmt)

    def seq(n, p, pairs):
        out = [] if not pairs else {}
        for _ in range(n):
            v, p = unpack_msgpack(buf, p)
            if pairs:
                out[v], p = unpack_msgpack(buf, p)
            else:
                out.append(v)
        return out, p

    if b <= 0x7F:
        return b, pos
    if b >= 0xE0:
        return b - 0x100, pos
    if 0x80 <= b <= 0x8F:
        return seq(b & 0x0F, pos, True)
    if 0x90 <= b <= 0x9F:
        return seq(b & 0x0F, pos, False)
    if 0xA0 <= b <= 0xBF:
        n = b & 0x1F
        return buf[pos:pos + n].decode(), pos + n
    if b in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[b], pos
    ints = {0xCC: "B", 0xCD: "H", 0xCE: "I", 0xCF: "Q", 0xD0: "b", 0xD1: "h", 0xD2: "i", 0xD3: "q",
            0xCA: "f", 0xCB: "d"}
    if b in ints:
        return take(ints[b])
    lens = {0xD9: "B", 0xDA: "H", 0xDB: "I", 0xC4: "B", 0xC5: "H", 0xC6: "I"}
    if b in lens:
        n, pos = take(lens[b])
        raw = buf[pos:pos + n]
        return (raw.decode() if b >= 0xD9 else bytes(raw)), pos + n
    if b in (0xDC, 0xDD, 0xDE, 0xDF):
        n, pos = take("H" if b in (0xDC, 0xDE) else "I")
        return seq(n, pos, b >= 0xDE)
    raise ValueError(f"MessagePack byte 0x{b:02x} at {pos - 1} is not one the code-object metadata uses")


class Hsaco:
    """The parts of an hsaco the tests check: ``machine``, ``osabi``, ``abiversion``, ``mach`` (e_flags & 0xff),
    ``symbols`` (name -> (type, size)) and ``metadata`` (the NT_AMDGPU_METADATA note, decoded)."""

    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a little-endian ELF64 file")
        self.osabi, self.abiversion = data[7], data[8]
        (_type, self.machine, _ver, _entry, _phoff, shoff, flags, _ehsize, _phentsize, _phnum, shentsize, shnum,
         _shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        self.mach = flags & 0xFF
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        self.symbols, self.metadata = {}, None
        for _name, sh_type, _fl, _addr, off, size, link, _info, _align, entsize in sections:
            if sh_type in (SHT_SYMTAB, SHT_DYNSYM):
                stroff = sections[link][4]
                for k in range(size // entsize):
                    st_name, st_info, _other, _shndx, _value, st_size = struct.unpack_from(
                        "<IBBHQQ", data, off + k * entsize)
                    name = data[stroff + st_name:data.index(b"\0", stroff + st_name)].decode()
                    if name:
                        self.symbols[name] = (st_info & 0xF, st_size)
            elif sh_type == SHT_NOTE:
                p = off
                while p < off + size:
                    namesz, descsz, ntype = struct.unpack_from("<III", data, p)
                    name = data[p + 12:p + 12 + namesz].rstrip(b"\0")
                    desc = p + 12 + (namesz + 3) // 4 * 4
                    if name == b"AMDGPU" and ntype == NT_AMDGPU_METADATA:
                        self.metadata, _ = unpack_msgpack(data[desc:desc + descsz])
                    p = desc + (descsz + 3) // 4 * 4

    def kernel(self, name: str) -> dict:
        """The metadata's entry of the kernel ``name`` (KeyError if the code object has none)."""
        for k in (self.metadata or {}).get("amdhsa.kernels", []):
            if k.get(".name") == name:
                return k
        raise KeyError(f"the hsaco's metadata names no kernel {name!r}")
