//! Turning Arcane's JSON answers into results (docs/output-format.md): the envelope unwrapped into
//! `structuredContent`. Streams are read by [`super::jsonlines`], downloads by [`super::transfer`].

use serde_json::Value;

/// Unwraps Arcane's `{success, data, pagination, …}` envelope into `structuredContent`. One
/// implementation serves results and output schemas, so that what is declared is what is sent:
/// see [`crate::output_schema::unwrap_envelope`].
pub fn unwrap_envelope(body: Value) -> Value {
    crate::output_schema::unwrap_envelope(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelope_unwrapping() {
        let list = json!({"success": true, "data": [{"id": 1}], "counts": {"total": 1},
                          "pagination": {"totalItems": 1}});
        assert_eq!(
            unwrap_envelope(list),
            json!({"items": [{"id": 1}], "counts": {"total": 1}, "pagination": {"totalItems": 1}})
        );
        let obj = json!({"$schema": "x", "success": true, "data": {"id": "a", "name": "web"}});
        assert_eq!(unwrap_envelope(obj), json!({"id": "a", "name": "web"}));
        let lone = json!({"success": true, "data": "1.2.3"});
        assert_eq!(unwrap_envelope(lone), json!({"value": "1.2.3"}));
        assert_eq!(unwrap_envelope(json!([1, 2])), json!({"items": [1, 2]}));
        assert_eq!(
            unwrap_envelope(json!({"$schema": "x", "status": "UP"})),
            json!({"status": "UP"})
        );
        assert_eq!(unwrap_envelope(json!(true)), json!({"value": true}));
    }
}
