//! A private tmux server per test, on its own socket, running `sh` at a known prompt: the console
//! is driven with send-keys and read with capture-pane, as a person at a terminal would.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The one session every test server runs.
const SESSION: &str = "e2e";

pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> Option<Output> {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .ok()
    }

    pub fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", SESSION])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        let _ = self.run(&args);
    }

    /// A tmux format (`#{alternate_on}`, `#{pane_pid}`) evaluated for the pane.
    pub fn format(&self, f: &str) -> String {
        self.run(&["display-message", "-p", "-t", SESSION, f])
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// Poll the screen until `pred` holds; the last screen either way.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            if start.elapsed() > timeout {
                panic!("timed out waiting for {what}; the screen was:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Only the private server this test started on its own socket.
        let _ = self.run(&["kill-server"]);
    }
}

pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A 120x40 server on socket `socket` running `sh` with `env`, waiting at `prompt`.
pub fn start_shell(socket: String, prompt: &str, env: &[(&str, String)]) -> Tmux {
    let tmux = Tmux { socket };
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut args = vec!["new-session", "-d", "-s", SESSION, "-x", "120", "-y", "40"];
    for kv in &env {
        args.extend_from_slice(&["-e", kv]);
    }
    args.push("sh");
    let started = tmux.run(&args);
    assert!(
        started.is_some_and(|o| o.status.success()),
        "tmux new-session failed"
    );
    // Some shells ignore PS1 from the environment (dash as root); set it at the prompt instead.
    tmux.wait_for("the shell", Duration::from_secs(10), |s| {
        !s.trim().is_empty()
    });
    tmux.keys(&[&format!("PS1='{prompt} '"), "Enter", "clear", "Enter"]);
    tmux.wait_for("the shell prompt", Duration::from_secs(10), |s| {
        s.contains(prompt)
    });
    tmux
}
