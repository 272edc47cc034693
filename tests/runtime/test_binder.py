"""JITFunction.run: binding, signature type strings, specialisation, the kernel cache, grids, options."""
from __future__ import annotations  # annotations stay strings: "tl.constexpr" needs no tritium.language here

import json

import numpy as np
import pytest

import tritium


@tritium.jit
def kern(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, FLAG: tl.constexpr = 3):  # noqa: F821
    pass


@tritium.jit(do_not_specialize=["n"])
def kern_dns(x_ptr, n, m):
    pass


@tritium.jit(do_not_specialize_on_alignment=["x_ptr"])
def kern_dnsa(x_ptr, n):
    pass


@pytest.fixture(autouse=True)
def _fresh_caches():
    for k in (kern, kern_dns, kern_dnsa):
        k.cache.clear()


def described(fake, i=-1):
    src = fake.compiles[i]
    return src.signature, src.constexprs, src.attrs


def arr(n=64, dtype=np.float32, offset=0):
    a = np.zeros(n + 8, dtype=dtype)
    base = a.ctypes.data
    # first element whose address is 16-byte aligned, then shifted by `offset` elements
    start = (-base % 16) // a.itemsize
    return a[start + offset:start + offset + n]


def test_signature_types_and_launch_args(fake):
    x, y = arr(), arr(dtype=np.int8)
    k = kern[(4,)](x, y, 1000, 2.5, BLOCK=128)
    sig, consts, attrs = described(fake)
    assert sig == {"x_ptr": "*fp32", "y_ptr": "*i8", "n": "i32", "scale": "fp32"}
    assert consts == {"BLOCK": 128, "FLAG": 3}
    kernel, grid, args = fake.launches[-1]
    assert kernel is k
    assert grid == (4, 1, 1)
    assert args[0] is x and args[1] is y and args[2:] == [1000, 2.5]


@pytest.mark.parametrize("value,ty", [(7, "i32"), (-(2 ** 31), "i32"), (2 ** 31, "i64"), (-(2 ** 40), "i64"),
                                      (2 ** 63, "u64"), (True, "i1"), (0.5, "fp32")])
def test_scalar_type_strings(fake, value, ty):
    kern[(1,)](arr(), arr(), value, 1.0, BLOCK=4)
    assert described(fake)[0]["n"] == ty


def test_integer_too_large(fake):
    with pytest.raises(OverflowError):
        kern[(1,)](arr(), arr(), 2 ** 64, 1.0, BLOCK=4)


@pytest.mark.parametrize("dtype,ty", [(np.float16, "*fp16"), (np.float64, "*fp64"), (np.int32, "*i32"),
                                      (np.int64, "*i64"), (np.uint8, "*u8"), (np.bool_, "*i1")])
def test_numpy_pointer_types(fake, dtype, ty):
    kern[(1,)](arr(dtype=dtype), arr(), 3, 1.0, BLOCK=4)
    assert described(fake)[0]["x_ptr"] == ty


def test_torch_tensor_types(fake):
    torch = pytest.importorskip("torch")
    x = torch.zeros(64, dtype=torch.bfloat16)
    y = torch.zeros(64, dtype=torch.float16)
    kern[(1,)](x, y, 3, 1.0, BLOCK=4)
    sig = described(fake)[0]
    assert sig["x_ptr"] == "*bf16" and sig["y_ptr"] == "*fp16"


def test_divisibility_specialisation(fake):
    kern[(1,)](arr(), arr(offset=1), 32, 1.0, BLOCK=4)
    sig, consts, attrs = described(fake)
    assert attrs == {"x_ptr": {"tt.divisibility": 16}, "n": {"tt.divisibility": 16}}
    assert "y_ptr" not in attrs  # 4 bytes past an aligned address
    kern[(1,)](arr(), arr(), 33, 1.0, BLOCK=4)
    assert "n" not in described(fake)[2]
    assert len(fake.compiles) == 2


def test_equal_to_one_becomes_constexpr(fake):
    x, y = arr(), arr()
    kern[(1,)](x, y, 1, 1.0, BLOCK=4)
    sig, consts, attrs = described(fake)
    assert "n" not in sig and consts["n"] == 1
    assert fake.launches[-1][2] == [x, y, 1.0]  # n is not a runtime argument any more


def test_none_becomes_constexpr(fake):
    x = arr()
    kern[(1,)](x, None, 5, 1.0, BLOCK=4)
    sig, consts, _ = described(fake)
    assert "y_ptr" not in sig and consts["y_ptr"] is None
    assert fake.launches[-1][2] == [x, 5, 1.0]


def test_do_not_specialize(fake):
    kern_dns[(1,)](arr(), 1, 1)
    sig, consts, attrs = described(fake)
    assert sig["n"] == "i32" and "n" not in consts  # not specialised
    assert "m" in consts and "m" not in sig  # specialised
    kern_dns[(1,)](arr(), 32, 5)
    assert "n" not in described(fake)[2]
    kern_dns[(1,)](arr(), 48, 5)
    assert len(fake.compiles) == 2  # n=1, 32 and 48 share one specialisation


def test_do_not_specialize_on_alignment(fake):
    kern_dnsa[(1,)](arr(), 16)
    assert described(fake)[2] == {"n": {"tt.divisibility": 16}}


def test_cache_hit_does_not_recompile(fake):
    x, y = arr(), arr()
    k1 = kern[(1,)](x, y, 100, 1.0, BLOCK=8)
    k2 = kern[(2,)](arr(), arr(), 200, 3.0, BLOCK=8)  # same types and specialisation
    assert k1 is k2 and len(fake.compiles) == 1 and len(fake.launches) == 2
    kern[(1,)](x, y, 100, 1.0, BLOCK=16)  # another constexpr value
    kern[(1,)](x, y, 100, 1.0, BLOCK=8, num_warps=8)  # another option
    kern[(1,)](x, y, 96, 1.0, BLOCK=8)  # divisible by 16
    assert len(fake.compiles) == 4


def test_cache_is_per_backend(register_fake, monkeypatch):
    a = register_fake(name="fakea")
    b = register_fake(name="fakeb")
    monkeypatch.setenv("TRITIUM_TARGET", "fakea")
    kern[(1,)](arr(), arr(), 3, 1.0, BLOCK=8)
    monkeypatch.setenv("TRITIUM_TARGET", "fakeb")
    k = kern[(1,)](arr(), arr(), 3, 1.0, BLOCK=8)
    assert len(a.compiles) == 1 and len(b.compiles) == 1 and k.metadata["backend"] == "fakeb"


def test_missing_constexpr(fake):
    with pytest.raises(TypeError, match=r"kernel 'kern' is missing constexpr argument 'BLOCK'"):
        kern[(1,)](arr(), arr(), 3, 1.0)


def test_missing_constexpr_with_typo(fake):
    with pytest.raises(TypeError, match=r"missing constexpr argument 'BLOCK'.*unexpected keyword argument 'BLOKC'"):
        kern[(1,)](arr(), arr(), 3, 1.0, BLOKC=4)


def test_missing_argument(fake):
    with pytest.raises(TypeError, match=r"kernel 'kern' is missing argument 'scale'"):
        kern[(1,)](arr(), arr(), 3, BLOCK=4)


def test_too_many_arguments(fake):
    with pytest.raises(TypeError, match=r"kernel 'kern' takes 6 arguments .* but 7 were given"):
        kern[(1,)](arr(), arr(), 3, 1.0, 4, 5, 6)


def test_multiple_values(fake):
    with pytest.raises(TypeError, match="multiple values for argument 'n'"):
        kern[(1,)](arr(), arr(), 3, 1.0, n=3, BLOCK=4)


def test_unknown_keyword(fake):
    with pytest.raises(TypeError, match=r"kern.*unknown option.*BLOKC"):
        kern[(1,)](arr(), arr(), 3, 1.0, BLOCK=4, BLOKC=4)
    assert fake.launches == []


def test_keywords_and_defaults(fake):
    x, y = arr(), arr()
    kern[(1,)](x_ptr=x, y_ptr=y, n=3, scale=2.0, BLOCK=4, FLAG=9)
    assert described(fake)[1] == {"BLOCK": 4, "FLAG": 9}


def test_options_reach_the_backend(fake):
    k = kern[(1,)](arr(), arr(), 3, 1.0, BLOCK=4, num_warps=8, num_stages=2, flavour="spicy")
    assert k.metadata["num_warps"] == 8 and k.metadata["options"]["num_stages"] == 2
    assert json.loads(k.asm["sig"])["flavour"] == "spicy"
    with pytest.raises(ValueError, match="power of 2"):
        kern[(1,)](arr(), arr(), 3, 1.0, BLOCK=4, num_warps=3)


def test_grid_callable_gets_meta(fake):
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tritium.cdiv(meta["n"], meta["BLOCK"]), 2)

    kern[grid](arr(), arr(), 1000, 1.0, BLOCK=128)
    assert fake.launches[-1][1] == (8, 2, 1)
    assert seen["BLOCK"] == 128 and seen["FLAG"] == 3 and seen["n"] == 1000


def test_grid_forms(fake):
    kern[3](arr(), arr(), 3, 1.0, BLOCK=4)
    assert fake.launches[-1][1] == (3, 1, 1)
    kern[(np.int64(2), 3, 4)](arr(), arr(), 3, 1.0, BLOCK=4)
    assert fake.launches[-1][1] == (2, 3, 4)
    n = len(fake.launches)
    kern[(0,)](arr(), arr(), 3, 1.0, BLOCK=4)  # empty grid: nothing runs
    assert len(fake.launches) == n
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        kern[(1, 1, 1, 1)](arr(), arr(), 3, 1.0, BLOCK=4)


def test_warmup_compiles_without_launching(fake):
    k = kern.warmup(arr(), arr(), 3, 1.0, BLOCK=4, grid=(1,))
    assert len(fake.compiles) == 1 and fake.launches == []
    assert k.metadata["name"] == "kern"
    k2 = kern.warmup("*fp16", "*fp32", "i64", "fp32", BLOCK=4, grid=(1,))
    assert described(fake)[0] == {"x_ptr": "*fp16", "y_ptr": "*fp32", "n": "i64", "scale": "fp32"}
    assert k2 is not k


def test_calling_directly_is_an_error():
    with pytest.raises(RuntimeError, match=r"kern\[grid\]"):
        kern(1, 2, 3, 4, 5)


def test_pre_run_hook(fake):
    calls = []

    @tritium.jit
    def k2(x):
        pass

    k2.add_pre_run_hook(lambda *a, **kw: calls.append(a))
    k2[(1,)](5)
    assert calls == [(5,)]


def test_cache_key_covers_callees():
    assert len(kern.cache_key) == 64
    assert kern.cache_key != kern_dns.cache_key


def test_misspelled_option_names_the_parameters_and_the_closest_option():
    import numpy as np

    @tritium.jit
    def k(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), 1.0)

    with pytest.raises(TypeError, match=r"kernel 'k' \(parameters: X, BLOCK\).*'num_warp': did you mean 'num_warps'\?"):
        k[(1,)](np.zeros(16, np.float32), BLOCK=16, num_warp=4)
