//! Expansion bombs for the tests of the budgets (docs/security.md, "Expansion budgets").

/// An OpenAPI document whose schema `L7` holds ten references to `L6`, which holds ten to
/// `L5`, … down to a string: about 4 KB that inline into ten million copies.
pub fn fan_out_spec() -> String {
    let mut schemas = vec![r#""L0":{"type":"string"}"#.to_string()];
    for level in 1..=7 {
        let props: Vec<String> = (0..10)
            .map(|i| {
                format!(
                    r##""p{i}":{{"$ref":"#/components/schemas/L{}"}}"##,
                    level - 1
                )
            })
            .collect();
        schemas.push(format!(
            r#""L{level}":{{"type":"object","properties":{{{}}}}}"#,
            props.join(",")
        ));
    }
    format!(
        r##"{{"openapi":"3.1.0","info":{{"title":"bomb","version":"1.0.0"}},"paths":{{"/environments/{{id}}/things":{{"get":{{"operationId":"list-things","parameters":[{{"name":"id","in":"path","required":true,"schema":{{"type":"string"}}}}],"responses":{{"200":{{"description":"ok","content":{{"application/json":{{"schema":{{"$ref":"#/components/schemas/L7"}}}}}}}}}}}}}}}},"components":{{"schemas":{{{}}}}}}}"##,
        schemas.join(",")
    )
}
