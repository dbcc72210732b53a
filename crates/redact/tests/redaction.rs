//! The redactor on the shapes of secrets found in Arcane's data, log lines and exec output
//! (docs/security.md, "Secrets"): environment values judged by their name and what they look
//! like, and one property test per shape of secret written in text — the secret masked, what
//! is around it kept.

use arcane_redact::{MASK, is_secret_name, mask_text, redact_for, redacted};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A GitHub token (`ghp_` and 36 letters and digits).
fn ghp() -> String {
    format!("ghp_{}", "aB3xY9".repeat(6))
}

/// A JWT (HS256, `{"sub":"1234567890"}`).
const JWT: &str =
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";

#[test]
fn environment_values_are_masked_by_name_and_by_shape_and_the_rest_kept() {
    let ghp = ghp();
    let v = json!({"config": {"env": [
        "LOG_LEVEL=info",
        "REDIS_URL=redis://cache:6379",
        "DB_PASSWORD=hunter2",
        "DATABASE_URL=postgres://shop:pw-Secret9@db:5432/shop",
        format!("UPSTREAM={ghp}"),
        format!("SESSION={JWT}"),
        "SIGNING=Zk3pQ9vX2mL7wR4tB8nC1yH6",
        "CA=-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/bin",
        "HOSTNAME=3f4e1b2c9a7d5e6f3f4e1b2c9a7d5e6f",
        "RUN_ID=0b7c6a1e-8d4f-4c2a-9b3e-5f6a7b8c9d0e",
        "NODE_VERSION=20.11.1",
        "MAIN_CLASS=com.example.Application2Service",
        "EMPTY=",
        "BARE",
    ]}});
    let m = redacted(&v, "container");
    assert_eq!(
        m["config"]["env"],
        json!([
            "LOG_LEVEL=info",
            "REDIS_URL=redis://cache:6379",
            format!("DB_PASSWORD={MASK}"),
            format!("DATABASE_URL=postgres://shop:{MASK}@db:5432/shop"),
            format!("UPSTREAM={MASK}"),
            format!("SESSION={MASK}"),
            format!("SIGNING={MASK}"),
            format!("CA={MASK}"),
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/bin",
            "HOSTNAME=3f4e1b2c9a7d5e6f3f4e1b2c9a7d5e6f",
            "RUN_ID=0b7c6a1e-8d4f-4c2a-9b3e-5f6a7b8c9d0e",
            "NODE_VERSION=20.11.1",
            "MAIN_CLASS=com.example.Application2Service",
            "EMPTY=",
            "BARE",
        ])
    );
}

#[test]
fn environment_maps_pairs_and_env_files_are_judged_the_same_way() {
    let ghp = ghp();
    let mut v = json!({
        "environment": {"LOG_LEVEL": "debug", "API_TOKEN": "t0k", "UPSTREAM": ghp, "PORT": 8080,
            "NOTHING": null},
        "Env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "SMTP_PASSWORD", "value": "pw2"},
            {"name": "CALLBACK", "value": JWT},
            {"name": "PLAIN", "value": "hidden", "isSecret": true},
        ],
        "envContent": format!("LOG_LEVEL=info\nDB_PASSWORD=hunter2\nUPSTREAM={ghp}\nREDIS_URL=redis://:pw3@cache:6379\n"),
    });
    let pointers = redact_for(&mut v, "project");
    assert_eq!(v["environment"]["LOG_LEVEL"], "debug");
    assert_eq!(v["environment"]["PORT"], 8080);
    assert_eq!(v["environment"]["NOTHING"], Value::Null);
    assert_eq!(v["environment"]["API_TOKEN"], MASK);
    assert_eq!(v["environment"]["UPSTREAM"], MASK);
    assert_eq!(v["Env"][0], json!({"name": "LOG_LEVEL", "value": "info"}));
    assert_eq!(v["Env"][1]["value"], MASK);
    assert_eq!(v["Env"][2]["value"], MASK);
    assert_eq!(v["Env"][3]["value"], MASK);
    assert_eq!(
        v["envContent"],
        format!(
            "LOG_LEVEL=info\nDB_PASSWORD={MASK}\nUPSTREAM={MASK}\nREDIS_URL=redis://:{MASK}@cache:6379\n"
        )
    );
    assert_eq!(
        pointers,
        [
            "/environment/API_TOKEN",
            "/environment/UPSTREAM",
            "/Env/1/value",
            "/Env/2/value",
            "/Env/3/value",
            "/envContent",
        ]
    );
}

#[test]
fn a_key_value_rule_matches_at_the_start_of_a_string_and_after_a_quote() {
    for (text, masked) in [
        ("DB_PASSWORD=hunter2", format!("DB_PASSWORD={MASK}")),
        (
            r#"["DB_PASSWORD=hunter2","MODE=prod"]"#,
            format!(r#"["DB_PASSWORD={MASK}","MODE=prod"]"#),
        ),
        (
            "'API_TOKEN=two words' next",
            format!("'API_TOKEN={MASK}' next"),
        ),
        (
            r#"{\"env\":[\"DB_PASSWORD=hunter2\",\"MODE=prod\"]}"#,
            format!(r#"{{\"env\":[\"DB_PASSWORD={MASK}\",\"MODE=prod\"]}}"#),
        ),
    ] {
        assert_eq!(mask_text(text), masked, "{text}");
    }
}

#[test]
fn tokens_of_a_known_shape_are_masked_in_any_text() {
    let ghp = ghp();
    let arcane_key = format!("arc_{}", "0123456789abcdef".repeat(4));
    for token in [
        ghp.as_str(),
        JWT,
        arcane_key.as_str(),
        "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn",
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
    ] {
        let text = format!("upstream {token} ready");
        assert_eq!(
            mask_text(&text),
            format!("upstream {MASK} ready"),
            "{token}"
        );
    }
    // Prefixes alone, and IDs of Docker's data, are not tokens.
    for text in [
        "ghp_short",
        "arc_0001",
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "disk-usage-monitor-production-eu-west",
    ] {
        assert_eq!(mask_text(text), text);
    }
}

#[test]
fn a_pem_private_key_keeps_its_frame_and_loses_its_body() {
    let text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq83v\n-----END RSA PRIVATE KEY-----\nafter";
    assert_eq!(
        mask_text(text),
        format!("key:\n-----BEGIN RSA PRIVATE KEY-----{MASK}-----END RSA PRIVATE KEY-----\nafter")
    );
    // Cut short: masked to the end.
    let cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg";
    assert_eq!(mask_text(cut), format!("-----BEGIN PRIVATE KEY-----{MASK}"));
    // A certificate is public.
    let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmg\n-----END CERTIFICATE-----";
    assert_eq!(mask_text(cert), cert);
}

/// Checks one shape of secret in text: for random secrets and neighbours, the secret is
/// masked and every neighbour kept. `shape` writes the text and the parts that must stay.
/// A neighbour that is itself a secret word ("pwd", "token") is no neighbour: what follows it
/// is rightly masked as its value (CI drew `pwd: your token was …`).
fn check_shape(shape: impl Fn(&str, &str) -> (String, Vec<String>)) {
    proptest!(ProptestConfig::with_cases(200), |(s in "[A-Za-z0-9]{6,20}", n in "[a-z]{3,8}")| {
        prop_assume!(!is_secret_name(&n));
        // The secret starts with capitals no neighbour holds.
        let secret = format!("QZ{s}");
        let (text, kept) = shape(&secret, &n);
        let masked = mask_text(&text);
        prop_assert!(!masked.contains(&secret), "{:?} -> {:?}", text, masked);
        prop_assert!(masked.contains(MASK), "{:?} -> {:?}", text, masked);
        for k in &kept {
            prop_assert!(masked.contains(k.as_str()), "{:?} lost in {:?} -> {:?}", k, text, masked);
        }
    });
}

#[test]
fn shape_env_array_in_a_json_log_line() {
    check_shape(|s, n| {
        (
            format!(
                r#"{{"ts":"12:00:01","msg":"starting {n}","env":["DB_PASSWORD={s}","LOG_LEVEL={n}"]}}"#
            ),
            vec![
                format!(r#""LOG_LEVEL={n}"]"#),
                format!(r#""msg":"starting {n}""#),
            ],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"{{"log":"{{\"env\":[\"API_TOKEN={s}\",\"MODE={n}\"]}}"}}"#),
            vec![format!(r#"\"MODE={n}\"]"#)],
        )
    });
    check_shape(|s, n| {
        (
            format!("env=['SECRET_KEY={s}', 'MODE={n}']"),
            vec![format!("'MODE={n}']")],
        )
    });
}

#[test]
fn shape_docker_e_with_a_quoted_assignment() {
    check_shape(|s, n| {
        (
            format!(r#"docker run -e"DB_PASSWORD={s}" -e"MODE={n}" --name {n} img"#),
            vec![format!(r#"-e"MODE={n}""#), format!("--name {n} img")],
        )
    });
    check_shape(|s, n| {
        (
            format!("docker run -e 'API_KEY={s} x' -e MODE={n} img"),
            vec![format!("' -e MODE={n} img")],
        )
    });
}

#[test]
fn shape_authorization_with_any_scheme() {
    check_shape(|s, n| {
        (
            format!(r#"curl -H "Authorization: token {s}" https://api.example.com/{n}"#),
            vec![
                "Authorization: token ".to_string(),
                format!("https://api.example.com/{n}"),
            ],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"{{"Authorization": "token {s}", "Accept": "{n}"}}"#),
            vec![format!(r#""Accept": "{n}""#)],
        )
    });
    check_shape(|s, n| {
        (
            format!("authorization=Digest {s} user={n}"),
            vec!["authorization=Digest ".to_string(), format!("user={n}")],
        )
    });
}

#[test]
fn shape_key_equals_value_with_blanks() {
    check_shape(|s, n| {
        (
            format!("[database]\nhost = {n}\npassword = {s}\nport = 5432"),
            vec![format!("host = {n}\n"), "\nport = 5432".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!("db_password   =   {s} # {n}"),
            vec![format!(" # {n}")],
        )
    });
}

#[test]
fn shape_single_quoted_keys() {
    check_shape(|s, n| {
        (
            format!("{{'user': '{n}', 'password': '{s}', 'port': 5432}}"),
            vec![format!("'user': '{n}'"), "'port': 5432".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"settings {{'api_key': "{s}", 'region': '{n}'}}"#),
            vec![format!("'region': '{n}'")],
        )
    });
}

#[test]
fn shape_escaped_json() {
    check_shape(|s, n| {
        (
            format!(r#"level=info msg="{{\"password\":\"{s}\",\"user\":\"{n}\"}}""#),
            vec![format!(r#"\"user\":\"{n}\""#)],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"{{\"db\": {{\"token\": \"{s} {n}\"}}, \"name\": \"{n}\"}}"#),
            vec![format!(r#"\"name\": \"{n}\""#)],
        )
    });
}

/// JSON inside a string of JSON under a key that says nothing (`config`, `payload`), at any
/// depth: the string is decoded, masked, and written back escaped. Before, the rules read the
/// whole string as the value of `config` and showed the password.
#[test]
fn shape_json_escaped_inside_a_json_string_at_any_depth() {
    assert_eq!(
        mask_text(r#"{"config":"{\"password\":\"hunter2\"}"}"#),
        r#"{"config":"{\"password\":\"********\"}"}"#
    );
    check_shape(|s, n| {
        (
            format!(r#"{{"config":"{{\"password\":\"{s}\",\"user\":\"{n}\"}}","at":"{n}"}}"#),
            vec![format!(r#"\"user\":\"{n}\""#), format!(r#""at":"{n}""#)],
        )
    });
    // Two and three levels deep, in a log line.
    check_shape(|s, n| {
        let inner =
            serde_json::to_string(&format!(r#"{{"db":{{"secret":"{s}"}},"host":"{n}"}}"#)).unwrap();
        let middle =
            serde_json::to_string(&format!(r#"{{"payload":{inner},"id":"{n}"}}"#)).unwrap();
        (
            format!(r#"12:00:01 worker {n}: {{"event":{middle}}}"#),
            vec![format!("worker {n}:"), format!("host")],
        )
    });
    check_shape(|s, n| {
        let mut text = format!(r#"{{"apiKey":"{s}","name":"{n}"}}"#);
        for _ in 0..3 {
            text = format!(r#"{{"wrapped":{}}}"#, serde_json::to_string(&text).unwrap());
        }
        (text, vec![n.to_string()])
    });
    // Escaped strings without a secret stay byte for byte.
    let plain = r#"{"config":"{\"user\":\"app\",\"path\":\"\/srv\"}"}"#;
    assert_eq!(mask_text(plain), plain);
}

#[test]
fn shape_secret_flags_in_commands() {
    check_shape(|s, n| {
        (
            format!("redis-server --requirepass {s} --port 6379 --dir /data/{n}"),
            vec!["--port 6379".to_string(), format!("--dir /data/{n}")],
        )
    });
    check_shape(|s, n| {
        (
            format!("mysql --password {s} --user {n}"),
            vec![format!("--user {n}")],
        )
    });
    check_shape(|s, n| {
        (
            format!("app --token={s} --name={n}"),
            vec![format!("--name={n}")],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"["redis-server","--requirepass","{s}","--appendonly","{n}"]"#),
            vec![format!(r#"","--appendonly","{n}"]"#)],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"{{"Cmd":["--masterauth={s}","--name={n}"]}}"#),
            vec![format!(r#"","--name={n}"]"#)],
        )
    });
}

#[test]
fn shape_tokens_under_neutral_names() {
    check_shape(|s, n| {
        let token = format!("ghp_{s}{}", "x1".repeat(15));
        (
            format!("UPSTREAM={token} MODE={n}"),
            vec![format!(" MODE={n}")],
        )
    });
}

#[test]
fn shape_a_secret_word_then_its_value_after_a_blank() {
    // A secret word passed over as no value may itself be the word before the value.
    for (text, kept) in [
        (
            "login apwd password QZAaAAA0 accepted",
            "login apwd password ",
        ),
        (
            "the api secret token QZhunter2 expired",
            "the api secret token ",
        ),
    ] {
        let masked = mask_text(text);
        assert!(!masked.contains("QZ"), "{text} -> {masked}");
        assert!(masked.starts_with(kept), "{text} -> {masked}");
    }
    check_shape(|s, n| {
        (
            format!("login {n} password {s} accepted"),
            vec![format!("login {n} password "), " accepted".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!("DB_PASSWORD {s}, user {n}."),
            vec![format!(", user {n}.")],
        )
    });
    check_shape(|s, n| {
        (
            format!("using api token \"{s} x\" for {n}"),
            vec![format!(" for {n}")],
        )
    });
}

#[test]
fn shape_a_secret_word_is_its_value() {
    check_shape(|s, n| {
        (
            format!("the password is: {s} (user {n})"),
            vec!["the password is: ".to_string(), format!("(user {n})")],
        )
    });
    check_shape(|s, n| {
        (
            format!("secret is '{s}' for {n}"),
            vec![format!("' for {n}"), "secret is '".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!("{n}: your token was \"{s}\""),
            vec![format!("{n}: your token was \"")],
        )
    });
}

#[test]
fn shape_curl_user_and_password() {
    check_shape(|s, n| {
        (
            format!("curl -s -u {n}:{s} https://registry.example.com/{n}"),
            vec![
                format!("-u {n}:"),
                format!(" https://registry.example.com/{n}"),
            ],
        )
    });
    check_shape(|s, n| {
        (
            format!("curl --user '{n}:{s}' -X POST http://h/{n}"),
            vec![format!("--user '{n}:"), format!("' -X POST http://h/{n}")],
        )
    });
    check_shape(|s, n| {
        (
            format!("wget --user={n}:{s} http://h/{n}"),
            vec![format!("--user={n}:"), format!(" http://h/{n}")],
        )
    });
}

#[test]
fn shape_database_clients_passwords() {
    check_shape(|s, n| {
        (
            format!("redis-cli -h {n} -a {s} ping"),
            vec![format!("redis-cli -h {n} -a "), " ping".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!("redis-cli --user {n} --pass {s} info"),
            vec![format!("--user {n} --pass "), " info".to_string()],
        )
    });
    check_shape(|s, n| {
        (
            format!("mysql -u {n} -p{s} -h db {n}"),
            vec![format!("mysql -u {n} -p"), format!(" -h db {n}")],
        )
    });
    check_shape(|s, n| {
        (
            format!("mysqldump --password={s} --user={n} shop"),
            vec![format!(" --user={n} shop")],
        )
    });
    check_shape(|s, n| {
        (
            format!("PGPASSWORD={s} psql -U {n} -h db"),
            vec![format!(" psql -U {n} -h db")],
        )
    });
}

#[test]
fn shape_percent_encoded_pairs() {
    check_shape(|s, n| {
        (
            format!("GET /login?next=%2Fapp%3Fuser%3D{n}%26password%3D{s}%26lang%3Den HTTP/1.1"),
            vec![
                format!("%3Fuser%3D{n}%26password%3D"),
                "%26lang%3Den HTTP/1.1".to_string(),
            ],
        )
    });
    check_shape(|s, n| {
        (
            format!("body=api_key%3d{s} from {n}"),
            vec![format!(" from {n}")],
        )
    });
}

#[test]
fn shape_json_escapes_spelling_a_secret_word() {
    check_shape(|s, n| {
        (
            format!(r#"{{"user":"{n}","\u0070assword":"{s}"}}"#),
            vec![format!(r#""user":"{n}""#)],
        )
    });
    check_shape(|s, n| {
        (
            format!(r#"cfg {{\"\u0074\u006Fken\":\"{s}\",\"mode\":\"{n}\"}}"#),
            vec![format!(r#"\"mode\":\"{n}\""#)],
        )
    });
}

#[test]
fn shape_a_quoted_env_value_over_several_lines() {
    // Exec output (`cat .env`): free text.
    check_shape(|s, n| {
        (
            format!("MODE={n}\nDB_PASSWORD=\"{s}\nQZ{s}2\"\nLOG={n}\n"),
            vec![format!("MODE={n}\n"), format!("\nLOG={n}\n")],
        )
    });
    // The same as a document (an env file downloaded, a value with line breaks).
    proptest!(ProptestConfig::with_cases(100), |(s in "[A-Za-z0-9]{6,20}", n in "[a-z]{3,8}")| {
        let secret = format!("QZ{s}");
        for q in ['"', '\''] {
            let text = format!("A={n}\nAPI_TOKEN={q}{secret}\nsecond {secret}\n{secret}{q}\nB={n}\n");
            let masked = arcane_redact::mask_document(&text);
            prop_assert!(!masked.contains(&secret), "{:?}", masked);
            prop_assert_eq!(masked.as_ref(), format!("A={n}\nAPI_TOKEN={MASK}\nB={n}\n"));
            let v = redacted(&json!({"envContent": text}), "project");
            prop_assert!(!v.to_string().contains(&secret), "{}", v);
        }
    });
}

/// Ordinary lines that name secrets or use the flags the rules above read, and must come out
/// as they went in.
#[test]
fn ordinary_log_lines_are_left_as_they_are() {
    for line in [
        "password reset email sent",
        "password reset email sent to user 42",
        "the password is incorrect",
        "token expired, refreshing",
        "token is required",
        "secret sauce recipe",
        "prompt tokens 1234, completion tokens 56",
        "use -a to show all",
        "ls -a /data",
        "curl -u flag docs",
        "curl -u user https://example.com",
        "docker run -p 8080:80 nginx",
        "mysql -p",
        "mysql -u root -P 3306 -h db",
        "redis-cli ping",
        "redis-cli -h cache -p 6379 info",
        "sort -u names.txt",
        "password changed for user bob",
        "your password must contain 8 characters",
        "a%3Db%26c%3Dd",
        "\\u0041BC",
        "MODE=\"prod\"\nLOG=debug",
        "password-less login enabled",
        "the token was refreshed",
        "Check the API key (ARCANE_API_KEY / --api-key): it must be valid",
        "set the token ARCANE_TOKEN or the api key ARCANE_API_KEY",
        "reading secret /run/secrets/db_password",
    ] {
        assert_eq!(mask_text(line), line, "{line}");
    }
}
