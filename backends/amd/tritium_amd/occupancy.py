"""Occupancy: how many waves of a kernel one SIMD (LLVM's "EU") holds at once, from the kernel's registers, its
work-group's LDS and its work-group size -- the rules LLVM's AMDGPU backend applies for its ``; Occupancy:``
comment (``GCNSubtarget::computeOccupancy``), one table row per arch family.

Where the numbers come from (LLVM's ``llvm/lib/Target/AMDGPU``; the AMDGPU usage docs' processor table):

* ``max_waves``: ``IsaInfo::getMaxWavesPerEU`` -- 8 with the gfx90a instructions (gfx90a, gfx942, gfx950), 10 on
  other GCN, 16 from gfx10.3 (RDNA2/3/4), 20 on gfx10.1;
* ``vgprs`` / ``granule``: ``getTotalNumVGPRs`` / ``getVGPRAllocGranule`` -- 512 in blocks of 8 with the gfx90a
  instructions (one unified file: the metadata's ``.vgpr_count`` already counts the AGPRs after the VGPRs); in
  wave32 1024 in blocks of 16 from gfx10.3, 1536 in blocks of 24 with ``Feature1_5xVGPRs`` (gfx1100, gfx1101,
  gfx1151, gfx1200, gfx1201); waves = min(max(total // roundup(vgprs, granule), 1), max_waves), every wave slot when
  fewer than a granule are used (``getNumWavesPerEUWithNumVGPRs``);
* ``sgpr_steps``: ``getOccupancyWithNumSGPRs`` -- from gfx8 to gfx9 (gfx90a / gfx942 / gfx950 included): <= 80 -> 10,
  <= 88 -> 9, <= 100 -> 8, else 7; no limit from gfx10 (SGPRs are not shared there);
* ``lds``: ``getLocalMemorySize`` -- 64 KiB per CU on gfx90a / gfx942, 160 KiB on gfx950, on RDNA 64 KiB addressable
  per work-group, doubled to 128 KiB per WGP in WGP mode (LLVM's default there);
  ``getOccupancyWithLocalMemSize``: work-groups per CU = min(lds // work-group LDS, the CU's work-group limit), their
  waves spread over the CU's ``eus`` SIMDs (4: a CU, or an RDNA WGP), clamped to ``max_waves``; a work-group of one
  wave is limited by the wave slots only, of more by ``getMaxWorkGroupsPerCU`` = min(max_waves * eus // waves per
  group, ``barriers``: 16, 32 on an RDNA WGP); a work-group LDS over the CU's gives 1, as LLVM's.

Checked against LLVM's own ``; Occupancy:`` (Triton's listings for gfx942 / gfx90a, and LLVM 22's llc through
ziglang's clang for hard cases: tests/amd/test_occupancy.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

KiB = 1024


@dataclass(frozen=True)
class OccupancyRules:
    max_waves: int      # wave slots per SIMD
    vgprs: int          # VGPRs (with AGPRs where unified) one SIMD holds for the kernel's wave size
    granule: int        # VGPR allocation block
    sgpr_steps: tuple   # ((max SGPRs, waves), ...) then the last waves for more; () when SGPRs never limit
    lds: int            # LDS bytes per CU (an RDNA WGP in WGP mode)
    eus: int = 4        # SIMDs sharing that LDS (a CU; an RDNA WGP)
    barriers: int = 16  # work-groups of more than one wave per CU (LLVM's barrier limit)


_GFX9_SGPRS = ((80, 10), (88, 9), (100, 8), (None, 7))
#: per arch family (CDNA: wave64; RDNA: wave32, as tritium compiles for it)
CDNA2_3 = OccupancyRules(max_waves=8, vgprs=512, granule=8, sgpr_steps=_GFX9_SGPRS, lds=64 * KiB)
CDNA4 = OccupancyRules(max_waves=8, vgprs=512, granule=8, sgpr_steps=_GFX9_SGPRS, lds=160 * KiB)
RDNA = OccupancyRules(max_waves=16, vgprs=1024, granule=16, sgpr_steps=(), lds=128 * KiB, barriers=32)
RDNA_1_5X_VGPRS = OccupancyRules(max_waves=16, vgprs=1536, granule=24, sgpr_steps=(), lds=128 * KiB, barriers=32)

#: arch (or arch prefix, longest first) -> its family's rules
ARCH_RULES = {"gfx90a": CDNA2_3, "gfx94": CDNA2_3, "gfx950": CDNA4,
              "gfx1100": RDNA_1_5X_VGPRS, "gfx1101": RDNA_1_5X_VGPRS, "gfx1151": RDNA_1_5X_VGPRS,
              "gfx1200": RDNA_1_5X_VGPRS, "gfx1201": RDNA_1_5X_VGPRS, "gfx103": RDNA, "gfx11": RDNA}


def rules_for(arch: str) -> Optional[OccupancyRules]:
    """The occupancy rules of ``arch`` (None for an arch the table does not know)."""
    arch = str(arch).lower()
    for prefix in sorted(ARCH_RULES, key=len, reverse=True):
        if arch.startswith(prefix):
            return ARCH_RULES[prefix]
    return None


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def occupancy_limits(arch: str, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int,
                     wave_size: int) -> Optional[dict]:
    """Waves per SIMD each resource allows: ``{"waves", "vgprs", "sgprs", "lds"}`` (the kernel's occupancy is their
    minimum: :func:`occupancy`); ``lds_bytes`` is the work-group's (static + dynamic), ``workgroup_size`` its
    threads.  None for an arch without rules."""
    r = rules_for(arch)
    if r is None:
        return None
    out = {"waves": r.max_waves}
    # VGPRs (unified with the AGPRs on CDNA2+: the .vgpr_count of the metadata)
    out["vgprs"] = r.max_waves if vgprs < r.granule else min(max(r.vgprs // (_ceil(vgprs, r.granule) * r.granule),
                                                                     1), r.max_waves)
    out["sgprs"] = r.max_waves
    for limit, waves in r.sgpr_steps:
        if limit is None or sgprs <= limit:
            out["sgprs"] = min(waves, r.max_waves)
            break
    # LDS: work-groups per CU, their waves spread over its SIMDs
    group_waves = max(1, _ceil(workgroup_size, wave_size))
    slots = r.max_waves * r.eus
    max_groups = slots if group_waves == 1 else min(slots // group_waves, r.barriers)
    groups = r.lds // max(lds_bytes, 1)
    out["lds"] = 1 if groups == 0 else min(_ceil(min(groups, max_groups) * group_waves, r.eus), r.max_waves)
    return out


def occupancy(arch: str, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int,
              wave_size: int) -> Optional[int]:
    """Waves per SIMD of a kernel: the least of :func:`occupancy_limits` (None for an arch without rules)."""
    lim = occupancy_limits(arch, vgprs, sgprs, lds_bytes, workgroup_size, wave_size)
    return None if lim is None else min(lim.values())
