package reallangbot

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Standin is a module LangBot imports that the test does not install, and
// why a stand-in is honest for it.
type Standin struct {
	Module string
	Reason string
}

// Standins lists every module the test serves instead of the real one.
// LangBot's check_deps looks each required module up (and runs pip when
// one is missing), its bot manager imports every IM adapter at start, and
// its HTTP server mounts an MCP server; so each of these must import,
// although none of them is on the path a test takes (web chat, local
// agent, OpenAI-compatible provider, plugins).
func Standins() []Standin {
	const adapter = "an IM platform SDK, imported by its adapter module only; the test chats through the embed web chat"
	const vdb = "a vector store client; the test creates no knowledge base"
	const provider = "a model provider SDK; the test's model is OpenAI-compatible, reached through litellm"
	return []Standin{
		{"aiocqhttp", adapter},
		{"botpy", adapter},
		{"dingtalk_stream", adapter},
		{"gewechat_client", adapter},
		{"lark_oapi", adapter},
		{"linebot", adapter},
		{"nakuru", adapter},
		{"nio", adapter + " (Debian's pulls much more)"},
		{"slack_sdk", adapter},
		{"telegram", adapter + " (Debian's pulls much more)"},
		{"telegramify_markdown", adapter},
		{"anthropic", provider},
		{"dashscope", provider},
		{"tboxsdk", provider},
		{"chromadb", vdb},
		{"glide", vdb},
		{"pgvector", vdb},
		{"pymilvus", vdb},
		{"pyseekdb", vdb},
		{"qdrant_client", vdb},
		{"numpy", "used by vector stores and embeddings only (Debian's pulls much more)"},
		{"tiktoken", "token counting for some providers; trixie's is a CPython 3.13 build"},
		{"quart_cors", "CORS for a web UI on another origin; the test calls the API directly"},
		{"mcp", "LangBot's own MCP server mount (/mcp), which the test never calls; not packaged by Debian for 3.11"},
		{"litellm", "on the AI path: a thin stand-in whose acompletion calls the real openai library (Debian's python3-openai), so every LLM call still reaches the fake LLM over HTTP"},
		{"Crypto", "the real pycryptodome, which Debian ships as Cryptodome: a link to it"},
	}
}

// placeholderModules are the stand-ins served by the placeholder finder
// (every stand-in except litellm and Crypto, which have real code).
func placeholderModules() []string {
	var out []string
	for _, s := range Standins() {
		if s.Module != "litellm" && s.Module != "Crypto" {
			out = append(out, s.Module)
		}
	}
	sort.Strings(out)
	return out
}

// finderPy serves each placeholder module (and any submodule of it) as a
// module whose every attribute is a placeholder class: callable,
// subclassable, usable as a (async) context manager, so that module-level
// code such as `from lark_oapi.api.im.v1 import CreateMessageRequest` or
// `class X(FastMCP)` runs. It is appended to sys.meta_path, after every
// real finder, so a module that is really there always wins.
const finderPy = `"""Stand-ins for modules LangBot imports but the test never uses (generated; see pkg/lbpkg/reallangbot.Standins)."""
import importlib.abc
import importlib.machinery
import sys
import types

NAMES = frozenset(%s)


def _placeholder(name):
    async def _aenter(self):
        return self

    async def _aexit(self, *a):
        return False

    return _Meta(name, (), {
        '__init__': lambda self, *a, **k: None,
        '__getattr__': lambda self, n: _placeholder(n),
        '__call__': lambda self, *a, **k: self,
        '__aenter__': _aenter, '__aexit__': _aexit,
        '__enter__': lambda self: self, '__exit__': lambda self, *a: False,
    })


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return _placeholder(name)


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        value = _placeholder(name)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split('.')[0] in NAMES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_Finder())
`

// litellmPy is the litellm stand-in: the exception classes LangBot checks
// and acompletion over the real openai client. The model name's provider
// prefix ("openai/") is litellm's routing and is stripped; everything
// else LangBot passes goes to the OpenAI-compatible endpoint as is.
const litellmPy = `"""litellm stand-in over the real openai library (generated; see pkg/lbpkg/reallangbot.Standins)."""
import openai


class APIError(Exception):
    pass


class BadRequestError(APIError):
    pass


class ContextWindowExceededError(BadRequestError):
    pass


class AuthenticationError(APIError):
    pass


class NotFoundError(APIError):
    pass


class RateLimitError(APIError):
    pass


class Timeout(APIError):
    pass


class APIConnectionError(APIError):
    pass


_LITELLM_ONLY = ('custom_llm_provider', 'drop_params', 'num_retries', 'api_version', 'allowed_openai_params')


async def acompletion(model, messages, api_key=None, api_base=None, timeout=None, **kwargs):
    for key in _LITELLM_ONLY:
        kwargs.pop(key, None)
    if '/' in model:
        model = model.split('/', 1)[1]
    client = openai.AsyncOpenAI(api_key=api_key or 'none', base_url=api_base, timeout=timeout or 60, max_retries=0)
    try:
        return await client.chat.completions.create(model=model, messages=messages, **kwargs)
    except openai.APIConnectionError as e:
        raise APIConnectionError(str(e)) from e
    except openai.APIError as e:
        raise APIError(str(e)) from e


async def aembedding(*args, **kwargs):
    raise APIError('embeddings are not part of the litellm stand-in')


async def arerank(*args, **kwargs):
    raise APIError('rerank is not part of the litellm stand-in')
`

// writeStandins writes the stand-ins into dir: the finder module (loaded
// by an import line of the .pth), litellm, the Crypto link to Debian's
// Cryptodome under debianSite, and langbot's metadata-only dist-info.
func writeStandins(dir, debianSite, version string) error {
	names := placeholderModules()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	files := map[string]string{
		"_langbot_standins.py":                       fmt.Sprintf(finderPy, "["+strings.Join(quoted, ", ")+"]"),
		"litellm/__init__.py":                        litellmPy,
		"langbot-" + version + ".dist-info/METADATA": "Metadata-Version: 2.1\nName: langbot\nVersion: " + version + "\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return os.Symlink(filepath.Join(debianSite, "Cryptodome"), filepath.Join(dir, "Crypto"))
}
