//! Parameters that carry JSON text (`encodedJson` in overlays): the inner fields of the encoded
//! object become ordinary, typed parameters of the action.
//!
//! Arcane takes some inputs as JSON inside a string or a multipart part (a project's
//! configuration on create is one part holding `{"name":…,"composeContent":…}`). Its document
//! only says "JSON encoded", so no client could guess the fields. An overlay gives the inner
//! schema (written from Arcane's own types); here the fields join the action's parameters, and
//! the engine (`arcane-engine`'s `encode.rs`) puts them back into the text when the action runs.
//! The raw parameter stays accepted. See docs/encoded-parameters.md.

use serde_json::Value;

use crate::model::{Action, EncodedJson, EncodedParam, Param, ParamLocation};

/// Exposes the inner fields of each declared parameter. A declaration that does not fit the
/// action (no such parameter, not a string, a name collision) is skipped and its problem
/// returned: like an overlay key that matches no action, it may be written for another Arcane
/// version, so the caller reports it instead of failing.
pub fn expose(action: &mut Action, list: &[EncodedJson]) -> Vec<String> {
    list.iter()
        .filter_map(|decl| expose_one(action, decl).err())
        .collect()
}

/// `Err` says why the declaration does not apply; the action is then unchanged.
fn expose_one(action: &mut Action, decl: &EncodedJson) -> Result<(), String> {
    let Some(raw_at) = action
        .params
        .iter()
        .position(|p| p.name == decl.param || p.wire_name == decl.param)
    else {
        return Err(format!(
            "encodedJson names the parameter {:?}, which the action does not have; its parameters are {}",
            decl.param,
            action
                .params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let raw = action.params[raw_at].clone();
    let is_string = raw.schema.get("type").and_then(Value::as_str) == Some("string");
    if !is_string
        || !matches!(
            raw.location,
            ParamLocation::FormField | ParamLocation::BodyProperty | ParamLocation::Query
        )
    {
        return Err(format!(
            "encodedJson parameter {} is not a string in the body, a form field or the query",
            raw.name
        ));
    }
    if action.request.encoded.iter().any(|e| e.param == raw.name) {
        return Err(format!("encodedJson lists {} twice", raw.name));
    }
    let Some(props) = decl.schema.get("properties").and_then(Value::as_object) else {
        return Err(format!(
            "the encodedJson schema of {} has no properties",
            raw.name
        ));
    };
    let required: Vec<String> = decl
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let prefix = decl.prefix.as_deref().unwrap_or("");

    let mut fields = Vec::new();
    let mut new_params = Vec::new();
    for (inner, schema) in props {
        let client = format!("{prefix}{inner}");
        if action.params.iter().any(|p| p.name == client)
            || new_params.iter().any(|p: &Param| p.name == client)
        {
            return Err(format!(
                "the field {inner} inside {} collides with the parameter {client}; set `prefix` in its encodedJson entry",
                raw.name
            ));
        }
        let own = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .trim_end_matches('.');
        let need = if decl.default.is_none() && required.iter().any(|r| r == inner) {
            format!("required unless {} is given", raw.name)
        } else {
            "optional".to_string()
        };
        let description = if own.is_empty() {
            format!("Field {inner} of {} ({need}).", raw.name)
        } else {
            format!("{own} (field {inner} of {}; {need}).", raw.name)
        };
        let mut schema = schema.clone();
        if let Some(obj) = schema.as_object_mut() {
            obj.insert("description".into(), Value::String(description.clone()));
        }
        fields.push((client.clone(), inner.clone()));
        new_params.push(Param {
            name: client,
            wire_name: inner.clone(),
            location: ParamLocation::Encoded,
            required: false,
            description,
            schema,
            takes_path: false,
        });
    }

    // The raw parameter becomes optional: the fields or a default stand in for it.
    let names: Vec<&str> = fields.iter().map(|(c, _)| c.as_str()).collect();
    let raw_description = format!(
        "{} As an alternative, give its fields as parameters ({}); not both.",
        if raw.description.trim().is_empty() {
            "JSON text.".to_string()
        } else {
            format!("{}.", raw.description.trim().trim_end_matches('.'))
        },
        names.join(", ")
    );
    {
        let p = &mut action.params[raw_at];
        p.required = false;
        p.description = raw_description.clone();
        if let Some(obj) = p.schema.as_object_mut() {
            obj.insert("description".into(), Value::String(raw_description.clone()));
        }
    }
    action.request.required.retain(|r| r != &raw.name);

    // The input schema: the fields before the raw parameter, which is no longer required.
    if let Some(schema) = action.request.input_schema.as_object_mut() {
        if let Some(Value::Array(req)) = schema.get_mut("required") {
            req.retain(|r| r.as_str() != Some(raw.name.as_str()));
            if req.is_empty() {
                schema.remove("required");
            }
        }
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            let old = std::mem::take(props);
            for (k, mut v) in old {
                if k == raw.name {
                    for p in &new_params {
                        props.insert(p.name.clone(), p.schema.clone());
                    }
                    if let Some(obj) = v.as_object_mut() {
                        obj.insert("description".into(), Value::String(raw_description.clone()));
                    }
                }
                props.insert(k, v);
            }
        }
    }
    action.params.splice(raw_at..raw_at, new_params);
    action.request.encoded.push(EncodedParam {
        param: raw.name.clone(),
        fields,
        required,
        raw_required: raw.required,
        default: decl.default.clone(),
    });
    Ok(())
}
