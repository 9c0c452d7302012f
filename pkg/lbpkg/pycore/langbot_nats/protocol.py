"""Protocol constants generated from pkg/bus, and the rules every call follows."""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import typing
from dataclasses import dataclass

GENERATED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated.json")

LANGUAGES = ("en_US", "zh_Hans")


@dataclass(frozen=True)
class Generated:
    """The builder's generated.json: ``protocol`` and ``plugin`` sections."""

    protocol: dict[str, typing.Any]
    plugin: dict[str, typing.Any]

    @property
    def name(self) -> str:
        """The plugin's wire name (``githubkit``)."""
        return self.plugin["plugin"]

    def timeout(self, kind: str) -> float:
        """A timeout of the forwarder in seconds."""
        return self.protocol["timeouts_ms"][kind] / 1000.0

    def header(self, key: str) -> str:
        return self.protocol["headers"][key]

    def text(self, key: str, lang: str) -> str:
        """A declared text (``unavailable``, ``failed``) in lang."""
        t = self.plugin["texts"][key]
        return t.get(lang) or t["en_US"]

    def not_configured(self, lang: str, item: str, binding: typing.Mapping[str, typing.Any]) -> str:
        """The answer while the config item cannot be used: its name and the
        installation's instance and workspace, never a value."""
        return self.text("not_configured", lang).format(
            item=item, instance=binding.get("instance_uuid", "?"), workspace=binding.get("workspace_uuid", "?")
        )


def load(path: str | None = None) -> Generated:
    """Read a generated.json; the default is the one next to this module."""
    if path is None:
        return _load_default()
    with open(path, "r", encoding="utf-8") as f:
        raw = json.load(f)
    return Generated(protocol=raw["protocol"], plugin=raw["plugin"])


@functools.lru_cache(maxsize=1)
def _load_default() -> Generated:
    return load(GENERATED_FILE)


class BindingError(ValueError):
    """The worker's binding cannot name a scope; it is refused, never rewritten."""


BINDING_FIELDS = (
    "instance_uuid",
    "workspace_uuid",
    "placement_generation",
    "installation_uuid",
    "runtime_revision",
    "artifact_digest",
)


def check_binding(gen: Generated, raw: typing.Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """Return the six binding fields of raw, or raise BindingError.

    The three scope tokens must match the protocol's token pattern; the
    generation and revision must be integers >= 1 and the digest non-empty.
    """
    token = re.compile(gen.protocol["scope_token_pattern"])
    out: dict[str, typing.Any] = {}
    for field in BINDING_FIELDS:
        if field not in raw or raw[field] is None:
            raise BindingError(f"binding has no {field}")
        out[field] = raw[field]
    for field in ("instance_uuid", "workspace_uuid", "installation_uuid"):
        v = out[field]
        if not isinstance(v, str) or token.fullmatch(v) is None:
            raise BindingError(f"binding {field} is not a valid scope token")
    for field in ("placement_generation", "runtime_revision"):
        v = out[field]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BindingError(f"binding {field} must be an integer >= 1")
    if not isinstance(out["artifact_digest"], str) or not out["artifact_digest"]:
        raise BindingError("binding artifact_digest is empty")
    return out


def scope_of(binding: typing.Mapping[str, typing.Any]) -> str:
    return f"{binding['instance_uuid']}.{binding['workspace_uuid']}.{binding['installation_uuid']}"


def with_defaults(gen: Generated, config: typing.Mapping[str, typing.Any] | None) -> tuple[dict[str, typing.Any], list[str]]:
    """The config with each absent (or null) item set to its manifest default,
    and the names of the items that took it.

    LangBot creates every installation with config ``{}`` and the SDK merges
    no manifest default, so the package does it from generated.json.
    """
    defaults = gen.plugin.get("config_defaults") or {}
    given = {k: v for k, v in (config or {}).items() if v is not None}
    missing = sorted(k for k in defaults if k not in given)
    return {**defaults, **given}, missing


class NotConfigured(Exception):
    """The package config cannot be used; ``item`` names the setting to fix."""

    def __init__(self, item: str) -> None:
        super().__init__(f"not configured: {item}")
        self.item = item


def forwarded_config(gen: Generated, config: typing.Mapping[str, typing.Any] | None) -> dict[str, typing.Any]:
    """The installation config without the package's own (NATS) items."""
    drop = set(gen.protocol["package_config_keys"])
    return {k: v for k, v in (config or {}).items() if k not in drop}


def language(gen: Generated, config: typing.Mapping[str, typing.Any] | None) -> str:
    lang = (config or {}).get("language")
    if lang in LANGUAGES:
        return typing.cast(str, lang)
    return gen.plugin["default_language"]


def new_traceparent() -> str:
    """A new root W3C traceparent (LangBot sends none)."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def new_invocation_id() -> str:
    return secrets.token_hex(16)


def subject(gen: Generated, template: str, **fields: str) -> str:
    """Fill one of the generated subject templates (invocation, lifecycle, host, host_serve)."""
    return gen.protocol["subjects"][template].format(**fields)


class ServiceError(Exception):
    """An error reply of the DESIGN 3.1 convention."""

    def __init__(self, code: int, word: str, message: str = "", reason: str = "") -> None:
        super().__init__(f"{code} {word}")
        self.code = code
        self.word = word
        self.message = message
        self.reason = reason

    def to_dict(self) -> dict[str, typing.Any]:
        d: dict[str, typing.Any] = {"code": self.word, "message": self.message}
        if self.reason:
            d["reason"] = self.reason
        return d


class Unavailable(Exception):
    """NATS or the service did not answer (down, no responders, too slow)."""


def error_word(gen: Generated, code: int) -> str:
    return gen.protocol["error_words"].get(str(code), "internal")


def make_error(gen: Generated, code: int, message: str, reason: str = "") -> ServiceError:
    return ServiceError(code, error_word(gen, code), message, reason)


def decode_reply(gen: Generated, headers: typing.Mapping[str, str] | None, data: bytes) -> typing.Any:
    """Decode a service reply: its JSON, or raise ServiceError for an error reply."""
    h = headers or {}
    code_text = h.get(gen.header("service_code"))
    if code_text is not None:
        try:
            code = int(code_text)
        except ValueError:
            code = 500
        word = h.get(gen.header("service_error")) or error_word(gen, code)
        message, reason = "", ""
        try:
            body = json.loads(data)
            err = body.get("error", {}) if isinstance(body, dict) else {}
            message = str(err.get("message", ""))
            reason = str(err.get("reason", "") or "")
        except ValueError:
            pass
        raise ServiceError(code, word, message, reason)
    try:
        return json.loads(data) if data else {}
    except ValueError as exc:
        raise ServiceError(500, error_word(gen, 500), "malformed reply") from exc


def encode_error(gen: Generated, err: ServiceError) -> tuple[dict[str, str], bytes]:
    """Headers and body of an error reply."""
    headers = {
        gen.header("service_error"): err.word,
        gen.header("service_code"): str(err.code),
        gen.header("content_type"): "application/json",
    }
    return headers, json.dumps({"error": err.to_dict()}).encode()
