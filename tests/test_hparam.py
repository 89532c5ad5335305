"""Tests for t2t_lite.hparam.HParams: typing, parsing, errors, JSON."""

import pytest

from t2t_lite.hparam import HParams, HParamsError, create_hparams


def make() -> HParams:
    return HParams(
        hidden_size=512,
        dropout=0.1,
        shared=True,
        schedule="constant*linear_warmup",
        dims=[1, 2],
        rates=[0.5, 1.5],
        flags=[True, False],
        names=["a", "b"],
    )


def test_types_are_inferred_and_reported():
    hparams = make()
    assert hparams.type_of("hidden_size") == "int"
    assert hparams.type_of("dropout") == "float"
    assert hparams.type_of("shared") == "bool"
    assert hparams.type_of("schedule") == "str"
    assert hparams.type_of("dims") == "list of int"
    assert hparams.type_of("rates") == "list of float"
    assert HParams(mixed=[1, 2.5]).mixed == [1.0, 2.5]


def test_parse_every_type():
    hparams = make().parse(
        "hidden_size=256, dropout=2e-1,shared=false,schedule=rsqrt_decay,"
        "dims=[3, 4,5],rates=[1,2.5],flags=[false,True],names=[x,'y z']"
    )
    assert hparams.hidden_size == 256 and type(hparams.hidden_size) is int
    assert hparams.dropout == 0.2
    assert hparams.shared is False
    assert hparams.schedule == "rsqrt_decay"
    assert hparams.dims == [3, 4, 5]
    assert hparams.rates == [1.0, 2.5] and type(hparams.rates[0]) is float
    assert hparams.flags == [False, True]
    assert hparams.names == ["x", "y z"]


def test_parse_int_into_float_and_bool_spellings():
    hparams = make().parse("dropout=1")
    assert hparams.dropout == 1.0 and type(hparams.dropout) is float
    for text, value in [
        ("true", True),
        ("True", True),
        ("1", True),
        ("FALSE", False),
        ("0", False),
    ]:
        assert make().parse(f"shared={text}").shared is value


def test_parse_quoted_string_may_hold_commas():
    hparams = make().parse('schedule="0,1",hidden_size=3')
    assert hparams.schedule == "0,1"
    assert hparams.hidden_size == 3


def test_parse_empty_and_empty_list():
    assert make().parse("") == make()
    assert make().parse("  ") == make()
    assert make().parse("dims=[]").dims == []


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("hidden_size=abc", r"hparam 'hidden_size' expects int, got 'abc'"),
        ("hidden_size=2.5", r"hparam 'hidden_size' expects int"),
        ("dropout=high", r"hparam 'dropout' expects float"),
        ("shared=yes", r"hparam 'shared' expects bool"),
        ("dims=3", r"hparam 'dims' expects list of int written as \[a,b,...\]"),
        ("dims=[1,x]", r"hparam 'dims' expects list of int, got 'x'"),
        ("hiden_size=3", r"unknown hparam 'hiden_size' \(closest: hidden_size"),
        ("hidden_size", r"malformed hparams 'hidden_size': expected name=value"),
        ("=3", r"malformed hparams '=3'"),
        ("dims=[1,2", r"unbalanced brackets or quotes"),
        ("hidden_size=1,hidden_size=2", r"hparam 'hidden_size' is assigned twice"),
    ],
)
def test_parse_errors_name_the_key_and_type(text, pattern):
    hparams = make()
    with pytest.raises(HParamsError, match=pattern):
        hparams.parse(text)
    assert hparams == make()  # nothing half-applied


def test_bad_string_applies_nothing():
    hparams = make()
    with pytest.raises(HParamsError):
        hparams.parse("hidden_size=7,dropout=oops")
    assert hparams.hidden_size == 512


def test_attribute_set_is_typed_and_strict():
    hparams = make()
    hparams.dropout = 1  # int is a valid float
    assert hparams.dropout == 1.0
    with pytest.raises(HParamsError, match="expects int, got str"):
        hparams.hidden_size = "big"
    with pytest.raises(HParamsError, match="expects bool, got int"):
        hparams.shared = 1
    with pytest.raises(HParamsError, match="Use add_hparam"):
        hparams.brand_new = 3
    with pytest.raises(AttributeError, match="unknown hparam 'hiden_size'"):
        _ = hparams.hiden_size


def test_add_hparam():
    hparams = make()
    hparams.add_hparam("num_heads", 8)
    assert hparams.num_heads == 8
    hparams.add_hparam("empty_ints", [], value_type=int)
    assert hparams.parse("empty_ints=[1,2]").empty_ints == [1, 2]
    with pytest.raises(HParamsError, match="already exists"):
        hparams.add_hparam("num_heads", 4)
    with pytest.raises(HParamsError, match="cannot be None"):
        hparams.add_hparam("nothing", None)
    with pytest.raises(HParamsError, match="unsupported type dict"):
        hparams.add_hparam("table", {"a": 1})
    with pytest.raises(HParamsError, match="not a valid identifier"):
        hparams.add_hparam("bad-name", 1)


def test_override_from_dict():
    hparams = make().override_from_dict({"hidden_size": 64, "dropout": 0, "dims": [7]})
    assert (hparams.hidden_size, hparams.dropout, hparams.dims) == (64, 0.0, [7])
    with pytest.raises(HParamsError, match="unknown hparam 'nope'"):
        make().override_from_dict({"nope": 1})
    with pytest.raises(HParamsError, match="hparam 'shared' expects bool"):
        make().override_from_dict({"shared": "true"})


def test_json_round_trip_keeps_values_and_types():
    hparams = make().parse("dropout=0,hidden_size=3")
    restored = HParams.from_json(hparams.to_json())
    assert restored == hparams
    assert restored.values() == hparams.values()
    for name in hparams:
        assert restored.type_of(name) == hparams.type_of(name), name
    assert type(restored.dropout) is float


def test_json_errors():
    with pytest.raises(HParamsError, match="malformed"):
        HParams.from_json("{not json")
    with pytest.raises(HParamsError, match="must be an object"):
        HParams.from_json("[1, 2]")


def test_copy_and_differences():
    hparams = make()
    clone = hparams.copy()
    clone.hidden_size = 1
    assert hparams.hidden_size == 512
    assert hparams.differences(clone) == ["hidden_size"]
    clone.add_hparam("extra", 1)
    assert hparams.differences(clone) == ["extra", "hidden_size"]


def test_values_is_a_copy():
    hparams = make()
    hparams.values()["dims"].append(9)
    assert hparams.dims == [1, 2]


def test_create_hparams_applies_overrides():
    hparams = create_hparams("transformer_tiny", "hidden_size=64,num_heads=2")
    assert (hparams.hidden_size, hparams.num_heads, hparams.filter_size) == (64, 2, 512)
