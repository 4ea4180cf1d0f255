//! Who a request comes from: bearer tokens (one per person), the middleware that checks them,
//! and the name a decision is recorded under.

use super::*;

/// One bearer token and the name its holder's decisions are recorded under.
pub struct ApiToken {
    pub name: String,
    pub secret: SecretString,
}

/// What a single unnamed token's callers are recorded as: whoever holds it, one operator.
pub const UNNAMED_TOKEN: &str = "api";

/// Reads the bearer tokens named by `--token-env` and checks the address may go without one.
pub fn token_for(listen: SocketAddr, token_env: Option<&str>) -> Result<Vec<ApiToken>, ServeError> {
    match token_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                parse_tokens(&v).map_err(|problem| ServeError::TokenInvalid {
                    var: var.to_string(),
                    problem,
                })
            }
            _ => Err(ServeError::TokenUnset(var.to_string())),
        },
        None if listen.ip().is_loopback() => Ok(Vec::new()),
        None => Err(ServeError::NoToken(listen)),
    }
}

pub(super) fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

/// `name=token` entries separated by commas or whitespace, one per person (decisions are recorded
/// under the name); anything else is one unnamed token, whose callers are all [`UNNAMED_TOKEN`].
/// Errors never quote a token.
pub fn parse_tokens(value: &str) -> Result<Vec<ApiToken>, String> {
    let entries: Vec<&str> = value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .collect();
    let named: Option<Vec<(&str, &str)>> = entries
        .iter()
        .map(|e| {
            e.split_once('=')
                // A base64 token's `=` padding is not a name separator.
                .filter(|(n, t)| valid_token_name(n) && !t.chars().all(|c| c == '='))
        })
        .collect();
    let Some(named) = named else {
        return Ok(vec![ApiToken {
            name: UNNAMED_TOKEN.into(),
            secret: SecretString::from(value.trim().to_string()),
        }]);
    };
    let mut out: Vec<ApiToken> = Vec::new();
    for (name, token) in named {
        if out.iter().any(|t| t.name == name) {
            return Err(format!("the token name {name:?} appears twice"));
        }
        if out.iter().any(|t| t.secret.expose_secret() == token) {
            return Err(format!(
                "{name:?} has the same token as another name: each person needs their own"
            ));
        }
        out.push(ApiToken {
            name: name.to_string(),
            secret: SecretString::from(token.to_string()),
        });
    }
    Ok(out)
}

/// The authenticated caller of a request: the name of the token it carried.
#[derive(Clone, Debug)]
pub(super) struct Caller(String);

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn bearer(req: &Request) -> &str {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("")
}

fn unauthorized() -> Response {
    let mut resp = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    resp
}

pub(super) async fn authenticate(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    // Health, readiness and metrics reveal no session data: a probe or a scraper needs no
    // operator's token (`/metrics` takes its own when `[serve] metrics_token` is set).
    if path == "/healthz" || path == "/readyz" {
        return next.run(req).await;
    }
    if path == "/metrics" {
        if let Some(token) = &state.metrics_token {
            let given = bearer(&req);
            if given.is_empty()
                || !constant_time_eq(given.as_bytes(), token.expose_secret().as_bytes())
            {
                return unauthorized();
            }
        }
        return next.run(req).await;
    }
    // Slack sends no bearer token: that route is authenticated by Slack's signature alone, and
    // Datadog's by its shared secret.
    let own_auth = [SLACK_INTERACTIONS, super::datadog::ROUTE].contains(&path.as_str());
    if !state.tokens.is_empty() && !own_auth {
        let given = bearer(&req);
        // Every token is compared, so the time taken does not tell which one nearly matched.
        let mut matched: Option<&str> = None;
        for t in &state.tokens {
            if constant_time_eq(given.as_bytes(), t.secret.expose_secret().as_bytes()) {
                matched = Some(&t.name);
            }
        }
        if let Some(name) = matched.filter(|_| !given.is_empty()) {
            req.extensions_mut().insert(Caller(name.to_string()));
        } else {
            return unauthorized();
        }
    }
    next.run(req).await
}

/// Who is deciding: the name of the token the caller authenticated with; with no tokens (loopback
/// only), the OS user the kernel says owns the caller's end of the connection. Never a name the
/// request states.
pub(super) fn decider(
    state: &AppState,
    caller: Option<&Caller>,
    peer: SocketAddr,
) -> Result<Decider, String> {
    let local_user = loopback_peer_uid(peer, state.local).map(crate::agent::approve::user_name);
    match (caller, local_user) {
        (Some(Caller(name)), Some(user)) => Ok(Decider {
            name: name.clone(),
            via: format!("api from {peer}, OS user {user}"),
        }),
        (Some(Caller(name)), None) => Ok(Decider {
            name: name.clone(),
            via: format!("api from {peer}"),
        }),
        (None, Some(user)) => Ok(Decider {
            name: user,
            via: format!("api from {peer}"),
        }),
        (None, None) => Err(format!(
            "cannot tell who is deciding: {peer} is not a local connection this host can attribute \
             to an OS user; start the server with --token-env and named tokens"
        )),
    }
}

/// The uid owning the client end of a loopback TCP connection to `server`, as the kernel lists it
/// in `/proc/net/tcp{,6}` (what identd answers). `None` off Linux, off loopback, or not found.
pub(super) fn loopback_peer_uid(peer: SocketAddr, server: SocketAddr) -> Option<u32> {
    if !peer.ip().is_loopback() || !cfg!(target_os = "linux") {
        return None;
    }
    let table = match peer {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    let text = std::fs::read_to_string(table).ok()?;
    find_socket_uid(&text, peer, server.port())
}

/// In a `/proc/net/tcp` table, the uid of the established socket whose local end is `local` and
/// whose remote port is `remote_port`.
pub(super) fn find_socket_uid(table: &str, local: SocketAddr, remote_port: u16) -> Option<u32> {
    // Addresses are the raw network-order bytes printed as native-endian 32-bit words.
    fn addr(field: &str) -> Option<(Vec<u8>, u16)> {
        let (ip, port) = field.split_once(':')?;
        if ip.len() % 8 != 0 {
            return None;
        }
        let mut bytes = Vec::with_capacity(ip.len() / 2);
        for i in (0..ip.len()).step_by(8) {
            let word = u32::from_str_radix(ip.get(i..i + 8)?, 16).ok()?;
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        Some((bytes, u16::from_str_radix(port, 16).ok()?))
    }
    let want: Vec<u8> = match local.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, st, uid) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(7)?);
        let (lip, lport) = addr(l)?;
        let (_, rport) = addr(r)?;
        // 01: established.
        (*st == "01" && lip == want && lport == local.port() && rport == remote_port)
            .then(|| uid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_required_off_loopback() {
        let public: SocketAddr = "0.0.0.0:9095".parse().expect("addr");
        let local: SocketAddr = "127.0.0.1:9095".parse().expect("addr");
        assert!(matches!(
            token_for(public, None),
            Err(ServeError::NoToken(_))
        ));
        assert!(matches!(token_for(local, None), Ok(t) if t.is_empty()));
        assert!(matches!(
            token_for(local, Some("SITREP_TEST_SURELY_UNSET_TOKEN")),
            Err(ServeError::TokenUnset(_))
        ));
    }

    fn names(tokens: &[ApiToken]) -> Vec<&str> {
        tokens.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn tokens_are_named_per_person_or_one_unnamed() {
        let t = parse_tokens("alice=tok-a1, bob=tok-b2\ncarol=dG9rZW4=").expect("named");
        assert_eq!(names(&t), ["alice", "bob", "carol"]);
        assert_eq!(t[2].secret.expose_secret(), "dG9rZW4=");
        // A bare token, base64 padding included, is one token for everyone: `api`.
        for bare in ["s3cret-token", "dG9rZW4=", "abc=="] {
            let t = parse_tokens(bare).expect("bare");
            assert_eq!(names(&t), [UNNAMED_TOKEN]);
            assert_eq!(t[0].secret.expose_secret(), bare);
        }
        let dup = parse_tokens("alice=x1,alice=x2").err().unwrap_or_default();
        assert!(dup.contains("twice"), "{dup}");
        let shared = parse_tokens("alice=same,bob=same")
            .err()
            .unwrap_or_default();
        assert!(
            shared.contains("same token") && !shared.contains("=same"),
            "{shared}"
        );
    }

    #[test]
    fn a_loopback_socket_is_found_by_its_two_ends() {
        // /proc/net/tcp as Linux prints it: 127.0.0.1:41234 -> 127.0.0.1:9095, uid 1001.
        let lo = u32::from_ne_bytes([127, 0, 0, 1]);
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
             0: {lo:08X}:2383 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n   \
             1: {lo:08X}:A0D2 {lo:08X}:2383 01 00000000:00000000 00:00000000 00000000  1001        0 2 1\n   \
             2: {lo:08X}:2383 {lo:08X}:A0D2 01 00000000:00000000 00:00000000 00000000     0        0 3 1\n"
        );
        let peer: SocketAddr = "127.0.0.1:41170".parse().expect("addr");
        assert_eq!(find_socket_uid(&table, peer, 9091), Some(1001));
        // The server's own end of the same connection, or another port, is not the caller.
        assert_eq!(find_socket_uid(&table, peer, 9092), None);
        let other: SocketAddr = "127.0.0.1:41171".parse().expect("addr");
        assert_eq!(find_socket_uid(&table, other, 9091), None);
        assert_eq!(find_socket_uid("garbage\n0: zz", peer, 9091), None);
        // /proc/net/tcp6: ::1 as four native-endian words.
        let one: String = std::net::Ipv6Addr::LOCALHOST
            .octets()
            .chunks(4)
            .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        let table6 = format!(
            "  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
             0: {one}:A0D2 {one}:2383 01 00000000:00000000 00:00000000 00000000  1002        0 4 1\n"
        );
        let peer6: SocketAddr = "[::1]:41170".parse().expect("addr");
        assert_eq!(find_socket_uid(&table6, peer6, 9091), Some(1002));
        assert_eq!(find_socket_uid(&table6, peer, 9091), None);
    }
}
