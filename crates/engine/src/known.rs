//! What the person's question knows besides the call (`effect::Known`): the names of its
//! targets and what its scope notes' lists say it would remove, read from Arcane before the
//! question is asked — only when someone will read it, bounded, and never failing the call:
//! whatever cannot be read is left out (a target shows its value alone) or said (a list that
//! could not be read).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::effect::{Known, Listed, MAX_LISTED};
use crate::resolve::{self, Lookup};
use crate::scope::Scope;
use arcane_catalog::{Action, ParamLocation};

/// Reads the targets' names and the applicable scope notes' lists of a call (validated, names
/// turned into IDs; `given`: what the caller gave for a value looked up), each within `limit`.
pub(crate) async fn read(
    via: &Lookup<'_>,
    scope: &Scope<'_>,
    action: &Action,
    params: &Map<String, Value>,
    given: &Map<String, Value>,
    ctx: &CallContext,
    limit: Duration,
) -> Known {
    let mut known = Known::default();
    let auth = ctx.auth(&via.config.auth);
    let environment = params
        .get("environmentId")
        .and_then(Value::as_str)
        .unwrap_or(&via.config.environment)
        .to_string();
    // The lists a target's name is read from: this call's environment and credential.
    let list = |through| resolve::List {
        via,
        auth,
        through,
        environment: &environment,
    };
    let served = |id: &str| scope.catalog.get(id).filter(|a| scope.policy.serves(a));
    // Targets' names: a value given as a name shows that name already.
    for p in action.targets() {
        let Some(value) = params.get(&p.name).and_then(Value::as_str) else {
            continue;
        };
        if given.contains_key(&p.name) {
            continue;
        }
        let Some((r, through)) = scope
            .catalog
            .resolvers
            .iter()
            .filter(|r| r.param == p.name && r.through != action.id)
            .find_map(|r| served(&r.through).map(|t| (r, t)))
        else {
            continue;
        };
        let named = tokio::time::timeout(limit, resolve::name_of(list(through), r, value))
            .await
            .ok()
            .flatten();
        if let Some(n) = named {
            known.names.insert(p.name.clone(), n);
        }
    }
    // The environment by name too, when it was given (or defaulted) as an ID.
    let env_param = action
        .params
        .iter()
        .find(|p| p.location == ParamLocation::Environment);
    if let Some(p) = env_param.filter(|p| !given.contains_key(&p.name))
        && let Some((r, through)) = scope
            .catalog
            .resolvers
            .iter()
            .filter(|r| r.param == p.name)
            .find_map(|r| served(&r.through).map(|t| (r, t)))
    {
        let named = tokio::time::timeout(limit, resolve::name_of(list(through), r, &environment))
            .await
            .ok()
            .flatten();
        if let Some(n) = named {
            known.names.insert(p.name.clone(), n);
        }
    }
    // What the call would remove, for each note that applies and can list it.
    for (i, note) in action.safety.confirm_scope.iter().enumerate() {
        let Some(list) = note.lists.as_ref().filter(|_| note.applies(params)) else {
            continue;
        };
        let Some(from) = served(&list.from) else {
            known
                .listed
                .insert(i, Err(format!("{} is not served here", list.from)));
            continue;
        };
        let in_env = from
            .params
            .iter()
            .any(|p| p.location == ParamLocation::Environment);
        let read = resolve::fetch_all(
            via,
            auth,
            from,
            in_env.then_some(environment.as_str()),
            &list.args,
        );
        let items = match tokio::time::timeout(limit, read).await {
            Ok(Ok(items)) => items,
            Ok(Err(why)) => {
                known.listed.insert(i, Err(why));
                continue;
            }
            Err(_) => {
                known.listed.insert(
                    i,
                    Err(format!(
                        "Arcane did not answer within {} s",
                        limit.as_secs()
                    )),
                );
                continue;
            }
        };
        let partial = items.len() >= resolve::MAX_ITEMS;
        let chosen: Vec<&Value> = items
            .iter()
            .filter(|item| list.only.as_ref().is_none_or(|c| c.holds(item)))
            .collect();
        let names = chosen
            .iter()
            .take(MAX_LISTED)
            .map(|item| shown_name(item, &list.show))
            .collect();
        let sizes: Vec<u64> = list
            .size
            .as_deref()
            .map(|f| chosen.iter().filter_map(|i| size_of(i.get(f))).collect())
            .unwrap_or_default();
        known.listed.insert(
            i,
            Ok(Listed {
                names,
                count: chosen.len(),
                bytes: (!sizes.is_empty()).then(|| sizes.iter().sum()),
                partial,
            }),
        );
    }
    known
}

/// How an item is named: its `show` field (an array's first element), else its ID; an image
/// with no tag is `<none>` as Docker shows it.
fn shown_name(item: &Value, show: &str) -> String {
    let named = match item.get(show) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    named
        .or_else(|| {
            item.get("id")
                .and_then(Value::as_str)
                .map(|id| format!("<none> ({})", arcane_markdown::clip(id, 19)))
        })
        .unwrap_or_else(|| "<none>".into())
}

/// A size in bytes: a number, or a number in a string.
fn size_of(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}
