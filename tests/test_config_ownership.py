"""Every audio and decode setting is read by name in one place: its config
builder (`FeatureConfig.from_hparams`, `AugmentConfig.from_hparams`,
`DecodeConfig.parse`). Every other module takes the typed config.

Read from the source (attribute names and string constants), so a module
that reads `hparams.audio_sample_rate` or `hparams.get("beam_size")` fails
here however it is reached.
"""

import ast
import dataclasses
import pathlib

import t2t_lite
from t2t_lite.data.audio_augment import AUGMENT_HPARAMS
from t2t_lite.data.feature_config import AUDIO_HPARAMS, PRIOR_MEAN, PRIOR_MEAN_SQUARE
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import LIMIT_HPARAMS

PACKAGE = pathlib.Path(t2t_lite.__file__).parent
BUILDERS = {
    "data/feature_config.py",
    "data/audio_augment/config.py",
    "decoding/decode_config.py",
    "decoding/run_config.py",
}
# From a flag or a request to a transcript: what runs below the commands.
DECODING_PATH = ("decoding/", "streaming/", "serving/", "server/", "litert/", "decoders.py")
# The one module on that path handed a run's hparams: it gives them to the
# problem's own API (T2T's `preprocess_example`), reading none.
HANDS_HPARAMS_TO_THE_PROBLEM = {"decoding/input_batches.py"}
AUDIO_NAMES = {*AUDIO_HPARAMS, *AUGMENT_HPARAMS, PRIOR_MEAN, PRIOR_MEAN_SQUARE}
LIMIT_NAMES = set(LIMIT_HPARAMS)
DECODE_NAMES = {field.name for field in dataclasses.fields(DecodeConfig)}


def names_read(source: str) -> list[tuple[int, str]]:
    """`(line, name)` of each hparam-like read: `x.name`, `x.get("name")`,
    `x["name"]`, `getattr(x, "name")`, and `"name" in x`."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            reads.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            key = node.args[1] if called == "getattr" and len(node.args) > 1 else node.args[0]
            if called in ("get", "getattr", "get_hparam", "set_hparam", "add_hparam"):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    reads.append((node.lineno, key.value))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                reads.append((node.lineno, node.slice.value))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            if isinstance(node.left.value, str):
                reads.append((node.lineno, node.left.value))
    return reads


def test_the_reader_finds_every_form_of_read():
    source = (
        "a = hparams.audio_sample_rate\nb = hparams.get('aug_envelope_db', 0)\n"
        "c = values['specaugment_time_masks']\nd = getattr(hp, 'beam_size')\n"
        "e = 'audio_frame_step' in hparams\n"
    )
    found = {name for _, name in names_read(source)}
    expected = {"audio_sample_rate", "aug_envelope_db", "specaugment_time_masks", "beam_size"}
    assert expected | {"audio_frame_step"} <= found


def test_only_the_config_builders_read_audio_hparams_by_name():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in BUILDERS:
            continue
        for line, name in names_read(path.read_text()):
            if name in AUDIO_NAMES:
                offenders.append(f"t2t_lite/{relative}:{line} reads {name}")
    assert not offenders, "\n".join(offenders)


def test_no_module_reads_decode_settings_from_hparams():
    """Decode settings are a `DecodeConfig`: nothing looks them up by a
    string key (`.get("beam_size")`, `["ctc_weight"]`)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in BUILDERS:
            continue
        tree_reads = names_read(path.read_text())
        attributes = {
            (node.lineno, node.attr)
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute)
        }
        for line, name in tree_reads:
            if name in DECODE_NAMES and (line, name) not in attributes:
                offenders.append(f"t2t_lite/{relative}:{line} looks up {name!r}")
    assert not offenders, "\n".join(offenders)


def test_the_config_builders_read_no_file_and_import_no_implementation():
    """A config class is typed settings and their checks: what they name on
    disk (an LM, a calibration) is loaded where a command starts
    (`decoding/checkpoints/run_decode_config.py`), and no builder imports
    the search, the streaming code or a runtime it configures."""
    offenders = []
    for relative in sorted(BUILDERS):
        tree = ast.parse((PACKAGE / relative).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["t2t_lite", "decoding"] and parts[2:3] != ["endpoint_hparams"]:
                    offenders.append(f"t2t_lite/{relative}:{node.lineno} imports {node.module}")
            called = getattr(node, "func", None)
            if isinstance(called, ast.Name) and called.id == "open":
                offenders.append(f"t2t_lite/{relative}:{node.lineno} opens a file")
    assert not offenders, "\n".join(offenders)


def _decoding_path_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(DECODING_PATH) and relative not in BUILDERS:
            yield relative, path.read_text()


def test_the_decoding_path_reads_the_length_limits_from_its_run_config():
    """`max_length`, `max_input_seq_length` and `max_target_seq_length` are
    read by `RunConfig.from_hparams` alone; the decoder, the exporters, the
    streaming code and the servers read `RunConfig`'s typed fields."""
    offenders = [
        f"t2t_lite/{relative}:{line} reads {name}"
        for relative, source in _decoding_path_modules()
        for line, name in names_read(source)
        if name in LIMIT_NAMES
    ]
    assert not offenders, "\n".join(offenders)


def test_below_the_commands_the_decoding_path_is_handed_typed_configs_not_hparams():
    """No module from a flag or a request to a transcript takes a run's
    `HParams` (a parameter or a name `hparams`, or `HParams` imported): the
    command, or `TrainedRun`, builds the `RunConfig` once and passes it down."""
    offenders = []
    for relative, source in _decoding_path_modules():
        if (
            relative in HANDS_HPARAMS_TO_THE_PROBLEM
            or relative == "decoding/checkpoints/trained_model.py"
        ):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.arg) and node.arg == "hparams":
                offenders.append(f"t2t_lite/{relative}:{node.lineno} takes hparams")
            elif isinstance(node, ast.Name) and node.id in ("hparams", "HParams"):
                offenders.append(f"t2t_lite/{relative}:{node.lineno} names {node.id}")
            elif isinstance(node, ast.ImportFrom) and node.module == "t2t_lite.hparam":
                offenders.append(f"t2t_lite/{relative}:{node.lineno} imports t2t_lite.hparam")
    assert not offenders, "\n".join(offenders)
