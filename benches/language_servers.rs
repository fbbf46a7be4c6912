//! What our own language-server client costs: a cold pyright (spawn,
//! `initialize`, the file opened, the first `textDocument/hover` answered)
//! and a warm one (the next hovers, the document unchanged; then each with
//! the document changed first, as after an edit), in the command sandbox,
//! over a small two-file project.
//!
//! `cargo bench --bench language_servers`, with `BAREAGENT_LSP_BIN` set as
//! `.ci/run` sets it. Knobs: `RUNS` (cold starts, default 5), `WARM`
//! (warm requests per start, default 20).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bareagent::language_servers::{CodeSettings, LanguageServers, ServerConfig};
use bareagent::sandbox::Sandbox;
use bareagent::tools::code::Intelligence;
use bareagent::workspace::{DiskWorkspace, Workspace};
use serde_json::json;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let Some(bin) = std::env::var_os("BAREAGENT_LSP_BIN") else {
        eprintln!("set BAREAGENT_LSP_BIN (.ci/run installs pyright)");
        return;
    };
    let (runs, warm) = (knob("RUNS", 5), knob("WARM", 20));
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().canonicalize().expect("the root");
    std::fs::write(
        root.join("shapes.py"),
        "def area(width: int, height: int) -> int:\n    return width * height\n",
    )
    .expect("shapes.py");
    let main_text = "from shapes import area\n\nresult = area(2, 3)\n";
    std::fs::write(root.join("main.py"), main_text).expect("main.py");
    let mut settings = CodeSettings::default();
    settings.servers.insert(
        "pyright".into(),
        ServerConfig {
            command: Path::new(&bin)
                .join("pyright-langserver")
                .display()
                .to_string(),
            args: vec!["--stdio".into()],
            extensions: vec!["py".into()],
            ..ServerConfig::default()
        },
    );
    let sandbox =
        Arc::new(Sandbox::for_commands(&Default::default(), &root, Vec::new()).expect("sandbox"));
    let disk = DiskWorkspace::new(&root).expect("workspace");
    let main = root.join("main.py");
    let hover = json!({"textDocument": {"uri": format!("file://{}", main.display())},
                       "position": {"line": 2, "character": 10}});
    let (mut cold, mut unchanged, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let servers = LanguageServers::new(&settings, &root, sandbox.clone());
        let started = Instant::now();
        servers
            .request(&disk, &main, "textDocument/hover", hover.clone())
            .await
            .expect("a cold answer");
        cold.push(started.elapsed());
        for _ in 0..warm {
            let started = Instant::now();
            servers
                .request(&disk, &main, "textDocument/hover", hover.clone())
                .await
                .expect("a warm answer");
            unchanged.push(started.elapsed());
        }
        for n in 0..warm {
            // An edit first (a comment more), as the model's next request
            // after a write would find it.
            let text = format!("{main_text}# edit {n}\n");
            disk.write_text(&main, &text, None).await.expect("the edit");
            let started = Instant::now();
            servers
                .request(&disk, &main, "textDocument/hover", hover.clone())
                .await
                .expect("an answer after a change");
            changed.push(started.elapsed());
        }
        disk.write_text(&main, main_text, None)
            .await
            .expect("put back");
        servers.stop().await;
    }
    println!("pyright in the sandbox, {runs} cold starts, {warm} warm requests each:");
    println!(
        "  cold (start, initialize, open, first hover): median {}, max {}",
        ms(median(cold.clone())),
        ms(*cold.iter().max().expect("runs"))
    );
    println!(
        "  warm hover, document unchanged:             median {}",
        ms(median(unchanged))
    );
    println!(
        "  warm hover, document changed just before:   median {}",
        ms(median(changed))
    );
}
