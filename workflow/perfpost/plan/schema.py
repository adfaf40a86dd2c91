"""What a JSON schema checks: the config against ``config.schema.yaml`` (Snakemake's
validator, which fills the defaults in), and each cell's tool params against its tool's schema;
a mistake is a :class:`~perfpost.errors.ConfigError` naming the key path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfpost import tools
from perfpost.errors import ConfigError

SCHEMA_PATH = Path(__file__).parent / "config.schema.yaml"


def validate_schema(config: dict[str, Any]) -> None:
    """Validate against the JSON schema with snakemake's validator, which fills defaults."""
    import jsonschema
    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, str(SCHEMA_PATH), set_default=True)
    except WorkflowError as e:
        # snakemake raises it inside `except ValidationError`, so the original is the context.
        cause = e.__cause__ or e.__context__
        if not isinstance(cause, jsonschema.ValidationError):
            raise
        # snakemake stops at the first error; ask jsonschema for the most relevant one.
        schema = yaml.safe_load(SCHEMA_PATH.read_text())
        best = (
            jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(schema).iter_errors(config)
            )
            or cause
        )
        raise ConfigError(_path(best), _message(best)) from None


def _path(error: Any) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path]
    return ".".join(parts).replace(".[", "[") or "(top level)"


def _unknown(error: Any) -> list[str]:
    """The keys an object has that its schema does not allow (an additionalProperties
    error's instance against the schema's properties and patterns)."""
    import re

    props = error.schema.get("properties", {})
    patterns = list(error.schema.get("patternProperties", {}))
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [k for k in instance if k not in props and not any(re.search(p, k) for p in patterns)]


def _close(key: str, known: Any) -> str | None:
    """The allowed key ``key`` is most likely a misspelling of, if one is close."""
    import difflib

    found = difflib.get_close_matches(key, [str(k) for k in known], n=1, cutoff=0.6)
    return found[0] if found else None


def _message(error: Any) -> str:
    if error.validator == "additionalProperties":
        unknown = _unknown(error)
        if not unknown:
            return error.message.replace("Additional properties are not allowed", "unknown key")
        said = []
        for key in unknown:
            near = _close(key, error.schema.get("properties", {}))
            said.append(f"{key!r}" + (f" (did you mean {near!r}?)" if near else ""))
        return ("unknown key " if len(said) == 1 else "unknown keys ") + ", ".join(said)
    if error.validator == "required" and isinstance(error.instance, dict):
        props = error.schema.get("properties", {})
        missing = [k for k in error.validator_value if k not in error.instance]
        for key in missing:
            given = [k for k in error.instance if k not in props and _close(k, [key])]
            if given:
                return f"{key!r} is a required property ({given[0]!r} is given: a misspelling?)"
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {error.validator_value}"
    if error.validator == "oneOf":
        # Say what each form would need, not "not valid under any of the given schemas".
        wants = [repr(b["type"]) for b in error.validator_value if "type" in b]
        return f"{error.instance!r} is not of type {' nor '.join(wants) or 'any form allowed'}"
    return error.message


def params_checker(schema: Mapping[str, Any]) -> _ParamsChecker:
    """A checker of cells' params against a tool's ``schema``."""
    return _ParamsChecker(schema)


class _ParamsChecker:
    """Checks each cell's tool parameters against the tool's schema, fast enough for 10,000
    cells (a whole-object validation per cell cost 85 us, most of a 10,000-cell `-n`).

    The params schemas are flat objects: whether the keys are allowed and required is decided
    once per set of keys, and each value once per key and value, with jsonschema's own
    messages. Cells differ in a few axis values, so almost every check is a lookup.
    """

    FLAT = frozenset({"type", "additionalProperties", "required", "properties", "description"})

    def __init__(self, schema: Mapping[str, Any]) -> None:
        import jsonschema

        self.schema = schema
        self.whole = jsonschema.Draft202012Validator(schema)
        self.flat = set(schema) <= self.FLAT and schema.get("type") == "object"
        props = schema.get("properties", {})
        self.keys = jsonschema.Draft202012Validator(
            {**schema, "properties": {k: {} for k in props}}
        )
        self.values = {k: jsonschema.Draft202012Validator(sub) for k, sub in props.items()}
        self.memo: dict[Any, list[tuple[str, str]]] = {}

    def errors(self, params: dict[str, Any]) -> list[tuple[str, str]]:
        """(path under params, message) of every mistake, sorted."""
        if not self.flat:
            return self._found(self.whole, params, ())
        out = list(self._once(("keys", *sorted(params)), self.keys, params, ()))
        for key, value in params.items():
            if key in self.values:
                if isinstance(value, str | int | float | bool | None):
                    memo_key = (key, type(value), value)  # True == 1, but not to a schema
                else:
                    memo_key = (key, json.dumps(value, sort_keys=True, default=repr))
                out += self._once(memo_key, self.values[key], value, (key,))
        # A misspelt key is both unknown and a required one missing: say the cause first.
        return sorted(out, key=lambda e: (e[0], not e[1].startswith("unknown key"), e[1]))

    def _once(self, memo_key: Any, validator: Any, instance: Any, at: tuple) -> list:
        if memo_key not in self.memo:
            self.memo[memo_key] = self._found(validator, instance, at)
        return self.memo[memo_key]

    @staticmethod
    def _found(validator: Any, instance: Any, at: tuple) -> list[tuple[str, str]]:
        found = []
        for e in validator.iter_errors(instance):
            e.path.extendleft(reversed(at))
            found.append((_path(e), _message(e)))
        return found


def _own(value: Any) -> Any:
    """A cell's own copy of a parameter value. Lists and dicts are copied, so that no cell
    shares one with the config or another cell; scalars (almost every value) need no copy."""
    if isinstance(value, list | dict):
        return copy.deepcopy(value)
    return value


def check_tool_params(
    tool: str, params: dict[str, Any], where: str, checker: _ParamsChecker | None
) -> dict[str, Any]:
    """A cell's params with the tool's defaults, checked against its schema (``checker``;
    None: they passed it before) and by the tool itself."""
    adapter = tools.get(tool)
    params = {k: _own(v) for k, v in params.items()}
    for key, sub in adapter.PARAMS_SCHEMA["properties"].items():
        if "default" in sub and key not in params:
            params[key] = _own(sub["default"])
    errors = checker.errors(params) if checker is not None else []
    if errors:
        sub, message = errors[0]
        place = f"{where}.params" + ("" if sub == "(top level)" else f".{sub}")
        raise ConfigError(place, message)
    adapter.check_params(params, f"{where}.params")
    return params
