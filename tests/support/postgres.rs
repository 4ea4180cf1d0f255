//! A real PostgreSQL server for tests: the Debian package's binaries, started in a temp dir on a
//! free loopback port, as an unprivileged user when the tests run as root (initdb refuses root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The superuser the tests set things up with (trusted on loopback).
pub const ADMIN: &str = "pgadmin";

pub struct Pg {
    pub port: u16,
    /// Holds `data/` and `server.log`.
    pub root: PathBuf,
    _tmp: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
}

fn find_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        .collect();
    // The newest installed version.
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Pg {
    /// The `[serve.store]` section a replica on this store is configured with, after `before`
    /// (the config's other sections) and with `store` (more `[serve.store]` keys) at its end.
    pub fn store_config(&self, before: &str, store: &str) -> String {
        format!(
            "{before}\n[serve.store]\nurl = \"postgres://{ADMIN}@127.0.0.1:{}/postgres?sslmode=disable\"\n{store}",
            self.port
        )
    }

    fn cmd(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let out = self
            .cmd(program)
            .args(args)
            .current_dir(&self.root)
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{program} {args:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out)
    }

    /// Starts a server; `conf` lines go into postgresql.conf and `hba` lines replace pg_hba.conf.
    /// `Err` says why a server cannot run here (the caller prints "skipped: ...").
    pub fn start(conf: &[&str], hba: &[&str]) -> Result<Pg, String> {
        let bin = find_bin().ok_or(
            "no PostgreSQL binaries under /usr/lib/postgresql (apt-get install postgresql)",
        )?;
        let run_as = if is_root() {
            let ok = Command::new("runuser")
                .args(["-u", "nobody", "--", "true"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err("running as root and `runuser -u nobody` does not work".into());
            }
            Some("nobody".to_string())
        } else {
            None
        };
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = tmp.path().join("pg");
        std::fs::create_dir(&root).map_err(|e| e.to_string())?;
        if run_as.is_some() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
                .map_err(|e| e.to_string())?;
            let nobody = users_ids("nobody").ok_or("no uid for nobody")?;
            std::os::unix::fs::chown(&root, Some(nobody.0), Some(nobody.1))
                .map_err(|e| format!("chown: {e}"))?;
        }
        let port = super::free_port();
        let pg = Pg {
            port,
            root: root.clone(),
            _tmp: tmp,
            bin,
            run_as,
        };
        pg.run(
            "initdb",
            &[
                "-D",
                "data",
                "-U",
                ADMIN,
                "--auth=trust",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ],
        )?;
        let mut lines = vec![
            format!("port = {port}"),
            "listen_addresses = '127.0.0.1'".into(),
            "unix_socket_directories = ''".into(),
            "fsync = off".into(),
            "shared_buffers = 16MB".into(),
            "log_statement = 'all'".into(),
            "log_line_prefix = '%m [%p] app=%a user=%u '".into(),
        ];
        lines.extend(conf.iter().map(|s| s.to_string()));
        append(&root.join("data/postgresql.conf"), &lines.join("\n"))?;
        let mut hba_lines: Vec<String> = vec![format!("host all {ADMIN} 127.0.0.1/32 trust")];
        hba_lines.extend(hba.iter().map(|s| s.to_string()));
        write_as(&root.join("data/pg_hba.conf"), &hba_lines.join("\n"))?;
        pg.run(
            "pg_ctl",
            &["-D", "data", "-l", "server.log", "-w", "-t", "60", "start"],
        )?;
        Ok(pg)
    }

    /// Stops the server (fast shutdown), keeping its data for [`Pg::resume`].
    pub fn pause(&self) -> Result<(), String> {
        self.run("pg_ctl", &["-D", "data", "-m", "fast", "-w", "stop"])
            .map(|_| ())
    }

    /// Starts a server [`Pg::pause`] stopped, on the same port and data.
    pub fn resume(&self) -> Result<(), String> {
        self.run(
            "pg_ctl",
            &["-D", "data", "-l", "server.log", "-w", "-t", "60", "start"],
        )
        .map(|_| ())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    /// A connection as `user` (the admin needs no password).
    pub async fn connect(
        &self,
        user: &str,
        password: Option<&str>,
        application_name: &str,
    ) -> tokio_postgres::Client {
        let mut cfg = tokio_postgres::Config::new();
        cfg.host("127.0.0.1")
            .port(self.port)
            .user(user)
            .dbname("postgres")
            .application_name(application_name)
            .connect_timeout(Duration::from_secs(10));
        if let Some(pw) = password {
            cfg.password(pw);
        }
        let (client, conn) = match cfg.connect(tokio_postgres::NoTls).await {
            Ok(c) => c,
            Err(e) => panic!("connect as {user}: {e}"),
        };
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", "data", "-m", "immediate", "stop"]);
    }
}

fn users_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name) && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "\n{text}").map_err(|e| e.to_string())
}

fn write_as(path: &Path, text: &str) -> Result<(), String> {
    // Overwriting keeps the file's owner (the server's user).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    use std::io::Write;
    writeln!(f, "{text}").map_err(|e| e.to_string())
}
