//! `concierge prompts`, through the binary, against a small MCP server in
//! Python (standard library only) that offers two prompts over stdio.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::concierge;
use std::path::Path;

const SERVER: &str = r#"import json, sys
PROMPTS = [
    {"name": "summarize", "description": "Summarize the notes on a topic",
     "arguments": [{"name": "topic", "description": "What about", "required": True}]},
    {"name": "greet", "description": "Say hello"},
]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"prompts": {}, "tools": {}},
                  "serverInfo": {"name": "notes", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "prompts/list":
        result = {"prompts": PROMPTS}
    elif method == "prompts/get":
        params = message["params"]
        args = params.get("arguments") or {}
        if params["name"] == "summarize":
            text = "Summarize what the notes say about " + args.get("topic", "?") + "."
        else:
            text = "Hello!"
        result = {"description": "a prompt", "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no " + method}})
        continue
    send({"jsonrpc": "2.0", "id": id, "result": result})
"#;

/// A configuration naming the Python server `notes`, in `dir`.
fn config(dir: &Path) -> String {
    let script = dir.join("notes.py");
    std::fs::write(&script, SERVER).unwrap();
    let config = dir.join("concierge.toml");
    std::fs::write(
        &config,
        format!(
            "db = \"prompts.db\"\n[mcp_servers.notes]\ncommand = \"python3\"\nargs = [{:?}]\n",
            script.to_string_lossy()
        ),
    )
    .unwrap();
    config.to_string_lossy().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn prompts_are_listed_and_filled_in_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());

    let out = concierge(dir.path(), &["--config", &config, "prompts", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(
        listed.contains("notes:summarize  Summarize the notes on a topic"),
        "{listed}"
    );
    assert!(listed.contains("--arg topic=… (required)  What about"), "{listed}");
    assert!(listed.contains("notes:greet"), "{listed}");

    let out = concierge(
        dir.path(),
        &[
            "--config",
            &config,
            "prompts",
            "get",
            "summarize",
            "--arg",
            "topic=refunds",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "# a prompt\nuser: Summarize what the notes say about refunds.\n"
    );

    let out = concierge(
        dir.path(),
        &["--config", &config, "prompts", "get", "notes:greet", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["messages"][0]["text"], "Hello!");
    assert_eq!(json["server"], "notes");

    // A missing argument, an unknown prompt and a malformed --arg say what to do.
    let out = concierge(dir.path(), &["--config", &config, "prompts", "get", "summarize"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("give topic"), "{}", text(&out.stderr));
    let out = concierge(dir.path(), &["--config", &config, "prompts", "get", "dance"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the prompts are notes:summarize, notes:greet"),
        "{}",
        text(&out.stderr)
    );
    let out = concierge(
        dir.path(),
        &["--config", &config, "prompts", "get", "summarize", "--arg", "topic"],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("is not KEY=VALUE"), "{}", text(&out.stderr));
}
