//! What a project create reads: the parts of a `multipart/form-data` body and the services of
//! a compose file.

use serde_json::{Value, json};

use super::common::str_array;

/// One part of a `multipart/form-data` body: its name, file name (if any) and text.
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub value: String,
}

/// The parts of a `multipart/form-data` body (as text). The boundary is the body's first
/// line, which is all a well-formed body needs.
pub fn multipart_parts(body: &[u8]) -> Vec<Part> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(body);
    let Some(first) = text.lines().next() else {
        return out;
    };
    let delim = first.trim_end();
    if !delim.starts_with("--") {
        return out;
    }
    for part in text.split(delim).skip(1) {
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let disposition = head.split("\r\n").next().unwrap_or("");
        let attr = |key: &str| {
            disposition
                .split(';')
                .map(str::trim)
                .find_map(|p| p.strip_prefix(key))
                .map(|v| v.trim_matches('"').to_string())
        };
        let Some(name) = attr("name=") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        out.push(Part {
            name,
            file_name: attr("filename="),
            value: value.to_string(),
        });
    }
    out
}

/// A compose file's services as stored in a project (compose-go's JSON shape, the fields
/// the simulator uses).
pub fn compose_services(project: &str, compose: &str) -> Result<Vec<Value>, String> {
    // A client's compose text: its aliases are budgeted before they are expanded.
    arcane_catalog::check_yaml(compose, "compose", &arcane_catalog::YAML_DATA_FILE)
        .map_err(|e| format!("invalid compose: {e}"))?;
    let doc: Value = yaml_serde::from_str(compose).map_err(|e| format!("invalid compose: {e}"))?;
    let Some(services) = doc.get("services").and_then(Value::as_object) else {
        return Err("invalid compose: no services".into());
    };
    let mut out = Vec::new();
    for (name, s) in services {
        let image = s
            .get("image")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{project}-{name}"));
        let mut svc = json!({"name": name, "image": image});
        let env: Vec<String> = match s.get("environment") {
            Some(a @ Value::Array(_)) => str_array(Some(a)),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    Value::Null => k.clone(),
                    v => format!("{k}={v}"),
                })
                .collect(),
            _ => Vec::new(),
        };
        if !env.is_empty() {
            svc["environment"] = json!(env);
        }
        if let Some(p) = s.get("ports") {
            svc["ports"] = p.clone();
        }
        if let Some(b) = s.get("build") {
            svc["build"] = b.clone();
        }
        out.push(svc);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// A compose text that repeats one 5,000-item list 5,000 times through aliases (about
    /// 30 KB, 25 million values once expanded) is refused before it is expanded.
    #[test]
    fn an_alias_bomb_is_refused_before_it_is_expanded() {
        let mut text = String::from("x-base: &a [");
        text.push_str(&vec!["x"; 5000].join(","));
        text.push_str("]\nservices:\n  web:\n    image: nginx\n    x-many:\n");
        for _ in 0..5000 {
            text.push_str("      - *a\n");
        }
        let err = super::compose_services("p", &text).unwrap_err();
        assert!(err.contains("expands to more than"), "{err}");
        assert!(super::compose_services("p", "services:\n  web: {image: nginx}\n").is_ok());
    }
}
