//! The executor's encoding step: the inner fields of a parameter that carries JSON text (see
//! `catalog::encoded` and docs/encoded-parameters.md) are put back into that text.
//!
//! Runs after local validation (each field was checked against its own schema) and before the
//! request is built. The raw parameter stays accepted; giving both forms is an error, because
//! silently preferring one would drop what the caller meant.

use serde_json::{Map, Value};

use crate::errors::validation_text;
use arcane_catalog::{Action, EncodedParam};

/// Replaces the inner fields of every encoded parameter by the JSON text of that parameter.
/// `Err` is the text of a failed call (nothing was sent).
pub fn apply(
    action: &Action,
    mut params: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    for enc in &action.request.encoded {
        encode_one(action, enc, &mut params)
            .map_err(|problem| validation_text(action, &[problem]))?;
    }
    Ok(params)
}

fn encode_one(
    action: &Action,
    enc: &EncodedParam,
    params: &mut Map<String, Value>,
) -> Result<(), String> {
    let given = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let field_names: Vec<&str> = enc.fields.iter().map(|(c, _)| c.as_str()).collect();
    let inner_given: Vec<&str> = field_names
        .iter()
        .copied()
        .filter(|c| given(params.get(*c)))
        .collect();
    let raw_given = given(params.get(&enc.param));

    if raw_given && !inner_given.is_empty() {
        return Err(format!(
            "give either {} (JSON text) or its fields as parameters ({}), not both; got {} and {}",
            enc.param,
            field_names.join(", "),
            enc.param,
            inner_given.join(", ")
        ));
    }
    if raw_given {
        // The escape hatch for a field the overlay does not know: passed as written, but it
        // must at least be JSON, or Arcane answers an opaque 400.
        let text = params
            .get(&enc.param)
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Err(e) = serde_json::from_str::<Value>(text) {
            return Err(format!(
                "{} must be JSON text ({e}); or give its fields as parameters instead: {}",
                enc.param,
                field_names.join(", ")
            ));
        }
        return Ok(());
    }
    if inner_given.is_empty() {
        return match &enc.default {
            Some(default) => {
                params.insert(enc.param.clone(), Value::String(default.to_string()));
                Ok(())
            }
            None if enc.raw_required => Err(format!(
                "{} needs {}: give {} as parameters (or {} as JSON text)",
                action.id,
                enc.param,
                required_clients(enc).join(", "),
                enc.param
            )),
            None => Ok(()),
        };
    }
    let mut object = Map::new();
    for (client, inner) in &enc.fields {
        if let Some(v) = params.remove(client)
            && !v.is_null()
        {
            object.insert(inner.clone(), v);
        }
    }
    let missing: Vec<String> = enc
        .fields
        .iter()
        .filter(|(_, inner)| enc.required.contains(inner) && !object.contains_key(inner))
        .map(|(client, _)| client.clone())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} also needs {} (fields of {})",
            action.id,
            missing.join(", "),
            enc.param
        ));
    }
    params.insert(
        enc.param.clone(),
        Value::String(Value::Object(object).to_string()),
    );
    Ok(())
}

/// Client names of the required inner fields (all fields when none is required).
fn required_clients(enc: &EncodedParam) -> Vec<&str> {
    let req: Vec<&str> = enc
        .fields
        .iter()
        .filter(|(_, inner)| enc.required.contains(inner))
        .map(|(client, _)| client.as_str())
        .collect();
    if req.is_empty() {
        enc.fields.iter().map(|(c, _)| c.as_str()).collect()
    } else {
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arcane_catalog::{Action, BodyEncoding, Param, ParamLocation, Request, Safety};
    use serde_json::json;

    fn action() -> Action {
        let param = |name: &str, location| Param {
            name: name.into(),
            wire_name: name.into(),
            location,
            required: false,
            description: String::new(),
            schema: json!({"type": "string"}),
            takes_path: false,
        };
        Action {
            id: "project.create".into(),
            domain: "project".into(),
            name: "create".into(),
            title: "Create project".into(),
            params: vec![
                param("name", ParamLocation::Encoded),
                param("composeContent", ParamLocation::Encoded),
                param("project", ParamLocation::FormField),
                param("fileChanges", ParamLocation::Encoded),
                param("manifest", ParamLocation::FormField),
            ],
            request: Request {
                method: "POST".into(),
                path: "/environments/{id}/projects".into(),
                input_schema: json!({"type": "object"}),
                body: BodyEncoding::Multipart,
                encoded: vec![
                    EncodedParam {
                        param: "project".into(),
                        fields: vec![
                            ("name".into(), "name".into()),
                            ("composeContent".into(), "composeContent".into()),
                        ],
                        required: vec!["name".into(), "composeContent".into()],
                        raw_required: true,
                        default: None,
                    },
                    EncodedParam {
                        param: "manifest".into(),
                        fields: vec![("fileChanges".into(), "fileChanges".into())],
                        required: vec!["fileChanges".into()],
                        raw_required: true,
                        default: Some(json!({"fileChanges": []})),
                    },
                ],
                ..Request::default()
            },
            safety: Safety {
                mutating: true,
                ..Safety::default()
            },
            source: "openapi".into(),
            derived_id: "project.create".into(),
            ..Action::default()
        }
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn fields_become_the_json_text_and_defaults_fill_the_rest() {
        let out = apply(
            &action(),
            map(json!({"name": "web", "composeContent": "services: {}\n"})),
        )
        .unwrap();
        assert!(out.get("name").is_none() && out.get("composeContent").is_none());
        let project: Value = serde_json::from_str(out["project"].as_str().unwrap()).unwrap();
        assert_eq!(
            project,
            json!({"name": "web", "composeContent": "services: {}\n"})
        );
        let manifest: Value = serde_json::from_str(out["manifest"].as_str().unwrap()).unwrap();
        assert_eq!(manifest, json!({"fileChanges": []}));
    }

    #[test]
    fn raw_text_passes_through_and_both_forms_are_refused() {
        let raw = r#"{"name":"web","composeContent":"x"}"#;
        let out = apply(&action(), map(json!({"project": raw}))).unwrap();
        assert_eq!(out["project"], raw);

        let err = apply(&action(), map(json!({"project": raw, "name": "web"}))).unwrap_err();
        assert!(err.contains("not both") && err.contains("name"), "{err}");
        assert!(err.contains("Nothing was sent"), "{err}");

        let err = apply(&action(), map(json!({"project": "{name: web"}))).unwrap_err();
        assert!(err.contains("must be JSON text"), "{err}");
    }

    #[test]
    fn missing_fields_are_named() {
        let err = apply(&action(), map(json!({"name": "web"}))).unwrap_err();
        assert!(err.contains("also needs composeContent"), "{err}");
        let err = apply(&action(), map(json!({}))).unwrap_err();
        assert!(
            err.contains("needs project") && err.contains("name, composeContent"),
            "{err}"
        );
    }
}
