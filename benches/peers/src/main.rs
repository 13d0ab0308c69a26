//! Accord side by side with peer engines on the same generated workloads.
//!
//! Each workload (from `benches/workload`) is expressed
//! - in Accord (the compiled, indexed snapshot: `Engine::matches`, which
//!   campaigns fire; `Engine::search` is also timed, the whole search with
//!   benefits evaluated and quota keys built),
//! - in zen-engine as one decision table with the `collect` hit policy: one
//!   row per rule, one input column per attribute that rules test with
//!   `eq`/`in`/ranges (so zen's own column index applies), and one
//!   expression column for the rest (regexes, `not_in`, item conditions),
//! - in zen-expression as one compiled standard expression per campaign
//!   (the lean form: no graph, one VM reused),
//! - in `cel` as one compiled program per campaign.
//!
//! Every engine must return the same set of campaigns for every request
//! (asserted before timing); then each is timed on the same requests in the
//! same run. The peers' inputs (zen `Variable`, CEL `Context`) are built
//! before the clock starts; Accord's times include preparing its request.
//! The ratios are to Accord's matching, the same work the peers do.
//!
//! `cargo run --release` in `benches/peers` (about 8 minutes to build the
//! first time). `-- storefront` runs one workload.
#![allow(clippy::cast_precision_loss)]

#[path = "../../workload/mod.rs"]
mod workload;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hint::black_box;
use std::sync::Arc;

use accord::campaign::{Campaign, Condition, ConditionType, Op, SearchRequest, ValueType};
use accord::engine::{CompiledCampaign, Engine};
use workload::{now, time_each, Stats, Workload};

type Matches = BTreeSet<String>;

// ------------------------------------------------------------ expressions

/// Where a condition reads, in zen (`attribute.x`, `#.sku`) and CEL
/// (`attribute.x`, `i.sku`) syntax.
fn path(c: &Condition, item: &str) -> String {
    match c.kind {
        ConditionType::Cart => format!("cart.{}", c.attribute),
        ConditionType::CartItem => format!("{item}.{}", c.attribute),
        _ => format!("attribute.{}", c.attribute),
    }
}

fn list_values(c: &Condition) -> Vec<String> {
    accord::condition::list::parse_list(&c.value).expect("generated lists parse")
}

fn quoted(vs: &[String]) -> String {
    vs.iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn number(c: &Condition) -> f64 {
    c.value.parse().expect("generated numbers parse")
}

fn cmp(op: &Op) -> &'static str {
    match op {
        Op::Eq => "==",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        other => panic!("not an ordering op: {other}"),
    }
}

/// A condition as a zen standard expression.
fn zen_cond(c: &Condition) -> String {
    let x = path(c, "#");
    let num = c.value_type == ValueType::Number;
    match &c.op {
        Op::Eq | Op::Gt | Op::Gte | Op::Lt | Op::Lte if num => {
            format!("{x} {} {}", cmp(&c.op), c.value)
        }
        Op::Eq => format!("{x} == {:?}", c.value),
        Op::In => format!("{x} in [{}]", quoted(&list_values(c))),
        Op::NotIn => format!("{x} not in [{}]", quoted(&list_values(c))),
        Op::Contains => format!("{:?} in {x}", c.value),
        Op::Matches => format!("matches({x}, {:?})", format!("^(?:{})$", c.value)),
        other => panic!("no zen form for {other}"),
    }
}

/// A condition as a CEL expression (numbers as doubles).
fn cel_cond(c: &Condition) -> String {
    let x = path(c, "i");
    let num = c.value_type == ValueType::Number;
    match &c.op {
        Op::Eq | Op::Gt | Op::Gte | Op::Lt | Op::Lte if num => {
            format!("{x} {} {:?}", cmp(&c.op), number(c))
        }
        Op::Eq => format!("{x} == {:?}", c.value),
        Op::In => format!("{x} in [{}]", quoted(&list_values(c))),
        Op::NotIn => format!("!({x} in [{}])", quoted(&list_values(c))),
        Op::Contains => format!("{:?} in {x}", c.value),
        Op::Matches => format!("{x}.matches({:?})", format!("^(?:{})$", c.value)),
        other => panic!("no CEL form for {other}"),
    }
}

/// The conjunction of a rule's conditions (every workload rule is one ALL
/// group): request conditions, then one "some item satisfies all item
/// conditions" test.
fn rule_expr(
    conds: &[&Condition],
    one: fn(&Condition) -> String,
    and: &str,
    some: fn(&str) -> String,
) -> String {
    let mut parts: Vec<String> = conds
        .iter()
        .filter(|c| c.kind != ConditionType::CartItem)
        .map(|c| one(c))
        .collect();
    let item: Vec<String> = conds
        .iter()
        .filter(|c| c.kind == ConditionType::CartItem)
        .map(|c| one(c))
        .collect();
    if !item.is_empty() {
        parts.push(some(&item.join(and)));
    }
    if parts.is_empty() {
        "true".to_owned()
    } else {
        parts.join(and)
    }
}

fn rule_conds(c: &Campaign, r: usize) -> Vec<&Condition> {
    assert!(c.rules[r].when.len() <= 1, "workload rules have one group");
    c.rules[r]
        .when
        .iter()
        .flat_map(|g| g.conditions.iter())
        .collect()
}

fn zen_some(s: &str) -> String {
    format!("some(cart.items, {s})")
}

fn cel_some(s: &str) -> String {
    format!("cart.items.exists(i, {s})")
}

/// A whole campaign as one zen expression.
fn zen_campaign(c: &Campaign) -> String {
    let rules: Vec<String> = (0..c.rules.len())
        .map(|r| format!("({})", rule_expr(&rule_conds(c, r), zen_cond, " and ", zen_some)))
        .collect();
    let body = rules.join(" or ");
    match &c.channel {
        Some(ch) => format!("channel == {ch:?} and ({body})"),
        None => body,
    }
}

/// A whole campaign as one CEL program source.
fn cel_campaign(c: &Campaign) -> String {
    let rules: Vec<String> = (0..c.rules.len())
        .map(|r| format!("({})", rule_expr(&rule_conds(c, r), cel_cond, " && ", cel_some)))
        .collect();
    let body = rules.join(" || ");
    match &c.channel {
        Some(ch) => format!("channel == {ch:?} && ({body})"),
        None => body,
    }
}

// ------------------------------------------------------------ zen decision table

/// One decision table, collect hit policy, one row per rule.
fn zen_table(w: &Workload) -> zen_engine::Decision {
    use serde_json::{json, Value};
    // Input columns: `channel`, then one per (field) that some rule tests
    // with a unary-expressible condition; the rest goes to column "rest".
    let mut columns: BTreeMap<String, usize> = BTreeMap::new();
    let mut rows: Vec<serde_json::Map<String, Value>> = Vec::new();
    for c in &w.campaigns {
        for r in 0..c.rules.len() {
            let mut row = serde_json::Map::new();
            row.insert("_id".into(), json!(format!("{}-{r}", c.ref_code)));
            row.insert("out".into(), json!(format!("{:?}", c.ref_code)));
            let mut rest: Vec<&Condition> = Vec::new();
            let mut cells: BTreeMap<String, String> = BTreeMap::new();
            if let Some(ch) = &c.channel {
                cells.insert("channel".into(), format!("{ch:?}"));
            }
            for cond in rule_conds(c, r) {
                let field = path(cond, "#");
                let unary = match &cond.op {
                    _ if cond.kind == ConditionType::CartItem => None,
                    Op::Eq | Op::Gt | Op::Gte | Op::Lt | Op::Lte
                        if cond.value_type == ValueType::Number =>
                    {
                        Some(if cond.op == Op::Eq {
                            cond.value.clone()
                        } else {
                            format!("{} {}", cmp(&cond.op), cond.value)
                        })
                    }
                    Op::Eq => Some(format!("{:?}", cond.value)),
                    Op::In => Some(quoted(&list_values(cond))),
                    _ => None,
                };
                match unary {
                    Some(cell) if !cells.contains_key(&field) => {
                        cells.insert(field, cell);
                    }
                    _ => rest.push(cond),
                }
            }
            if !rest.is_empty() {
                cells.insert(String::new(), rule_expr(&rest, zen_cond, " and ", zen_some));
            }
            for (field, cell) in cells {
                let n = columns.len();
                let id = *columns.entry(field).or_insert(n);
                row.insert(format!("in{id}"), json!(cell));
            }
            rows.push(row);
        }
    }
    let inputs: Vec<Value> = columns
        .iter()
        .map(|(field, id)| {
            if field.is_empty() {
                json!({"id": format!("in{id}"), "name": "rest"})
            } else {
                json!({"id": format!("in{id}"), "name": field, "field": field})
            }
        })
        .collect();
    let graph = json!({
        "nodes": [
            {"id": "request", "name": "request", "type": "inputNode", "content": {}},
            {"id": "table", "name": "campaigns", "type": "decisionTableNode", "content": {
                "hitPolicy": "collect",
                "inputs": inputs,
                "outputs": [{"id": "out", "name": "code", "field": "code"}],
                "rules": rows
            }},
            {"id": "response", "name": "response", "type": "outputNode", "content": {}}
        ],
        "edges": [
            {"id": "e1", "sourceId": "request", "targetId": "table"},
            {"id": "e2", "sourceId": "table", "targetId": "response"}
        ]
    });
    let content: zen_engine::model::GraphContent =
        serde_json::from_value(graph).expect("decision graph");
    let mut decision = zen_engine::Decision::from(content);
    decision.compile();
    decision
}

fn zen_table_matches(d: &zen_engine::Decision, input: &zen_expression::variable::Variable) -> Matches {
    let res = pollster::block_on(d.evaluate(input.clone())).expect("zen evaluates");
    let v = res.result.to_value();
    v.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["code"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

// ------------------------------------------------------------ inputs

fn request_json(r: &SearchRequest) -> serde_json::Value {
    serde_json::to_value(r).expect("request serializes")
}

/// A JSON value as CEL, every number a double.
fn cel_value(v: &serde_json::Value) -> cel::Value {
    use serde_json::Value as J;
    match v {
        J::Null => cel::Value::Null,
        J::Bool(b) => cel::Value::Bool(*b),
        J::Number(n) => cel::Value::Float(n.as_f64().expect("finite")),
        J::String(s) => cel::Value::String(Arc::new(s.clone())),
        J::Array(xs) => cel::Value::List(Arc::new(xs.iter().map(cel_value).collect())),
        J::Object(m) => {
            let map: HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), cel_value(v))).collect();
            cel::Value::from(map)
        }
    }
}

fn cel_context(r: &SearchRequest) -> cel::Context<'static, 'static> {
    let j = request_json(r);
    let mut ctx = cel::Context::default();
    for k in ["attribute", "cart", "channel"] {
        ctx.add_variable_from_value(k, cel_value(&j[k]));
    }
    ctx
}

// ------------------------------------------------------------ main

fn accord_matches(e: &Engine, r: &SearchRequest) -> Matches {
    let matched: Matches = e
        .matches(r, now())
        .expect("match")
        .campaigns()
        .map(|c| c.campaign.ref_code.clone())
        .collect();
    // The generated benefits always evaluate: the whole search keeps them all.
    let searched: Matches = e
        .search(r, now(), false)
        .expect("search")
        .hits
        .iter()
        .map(|h| h.campaign.campaign.ref_code.clone())
        .collect();
    assert_eq!(matched, searched, "Accord matches and search");
    matched
}

fn line(name: &str, s: &Stats, accord: &Stats) {
    println!(
        "  {name:<34} median {:>11.2} µs  p99 {:>11.2} µs  {:>10.0} searches/s  median ratio to Accord {:>8.1}×",
        s.median,
        s.p99,
        s.per_second(),
        s.median / accord.median
    );
}

fn run(w: &Workload, requests: usize, rounds: usize) {
    let reqs: Vec<SearchRequest> = w.requests.iter().take(requests).cloned().collect();
    let t = std::time::Instant::now();
    let engine = Engine::new(
        w.campaigns
            .iter()
            .map(|c| Arc::new(CompiledCampaign::compile(c).expect("compiles"))),
    );
    let accord_build = t.elapsed();
    let t = std::time::Instant::now();
    let table = zen_table(w);
    let zen_build = t.elapsed();
    let t = std::time::Instant::now();
    let mut isolate = zen_expression::Isolate::new();
    let zen_exprs: Vec<(String, zen_expression::Expression<zen_expression::expression::Standard>)> = w
        .campaigns
        .iter()
        .map(|c| {
            let src = zen_campaign(c);
            let e = isolate
                .compile_standard(&src)
                .unwrap_or_else(|e| panic!("zen compiles {src}: {e:?}"));
            (c.ref_code.clone(), e)
        })
        .collect();
    let expr_build = t.elapsed();
    let t = std::time::Instant::now();
    let cel_programs: Vec<(String, cel::Program)> = w
        .campaigns
        .iter()
        .map(|c| {
            let src = cel_campaign(c);
            let p = cel::Program::compile(&src).unwrap_or_else(|e| panic!("CEL compiles {src}: {e}"));
            (c.ref_code.clone(), p)
        })
        .collect();
    let cel_build = t.elapsed();

    // Inputs, built before any clock starts.
    let zen_inputs: Vec<zen_expression::variable::Variable> =
        reqs.iter().map(|r| request_json(r).into()).collect();
    let cel_inputs: Vec<cel::Context> = reqs.iter().map(cel_context).collect();
    let mut vm = zen_expression::vm::VM::new();
    let mut expr_matches = |input: &zen_expression::variable::Variable| -> Matches {
        let scope = zen_expression::scope::Scope::new(input.clone());
        zen_exprs
            .iter()
            .filter(|(_, e)| {
                e.evaluate_with_scope(&scope, &mut vm)
                    .ok()
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false)
            })
            .map(|(code, _)| code.clone())
            .collect()
    };
    let cel_matches = |ctx: &cel::Context| -> Matches {
        cel_programs
            .iter()
            .filter(|(_, p)| matches!(p.execute(ctx), Ok(cel::Value::Bool(true))))
            .map(|(code, _)| code.clone())
            .collect()
    };

    // Same answers, request by request.
    let mut total = 0usize;
    for (i, r) in reqs.iter().enumerate() {
        let a = accord_matches(&engine, r);
        total += a.len();
        assert_eq!(zen_table_matches(&table, &zen_inputs[i]), a, "zen decision table, request {i}");
        assert_eq!(expr_matches(&zen_inputs[i]), a, "zen expressions, request {i}");
        assert_eq!(cel_matches(&cel_inputs[i]), a, "CEL, request {i}");
    }
    println!(
        "{} — {} campaigns, {} requests, {} rounds; all four engines agree on every request ({} matches, {:.3}% of campaigns per request)",
        w.name,
        w.campaigns.len(),
        reqs.len(),
        rounds,
        total,
        total as f64 * 100.0 / (reqs.len() * w.campaigns.len()) as f64
    );
    println!(
        "  build: Accord {:.1} ms, zen table {:.1} ms, zen expressions {:.1} ms, CEL {:.1} ms",
        accord_build.as_secs_f64() * 1e3,
        zen_build.as_secs_f64() * 1e3,
        expr_build.as_secs_f64() * 1e3,
        cel_build.as_secs_f64() * 1e3
    );

    // Timing: interleaved per engine over the same requests.
    let idx: Vec<usize> = (0..reqs.len()).collect();
    let accord = time_each(&idx, rounds, |&i| {
        black_box(engine.matches(&reqs[i], now()).expect("match").len());
    });
    let accord_search = time_each(&idx, rounds, |&i| {
        black_box(engine.search(&reqs[i], now(), false).expect("search"));
    });
    let table_s = time_each(&idx, rounds, |&i| {
        black_box(zen_table_matches(&table, &zen_inputs[i]));
    });
    let expr_s = time_each(&idx, rounds, |&i| {
        black_box(expr_matches(&zen_inputs[i]));
    });
    let cel_s = time_each(&idx, rounds, |&i| {
        black_box(cel_matches(&cel_inputs[i]));
    });
    line("Accord matching (indexed snapshot)", &accord, &accord);
    line("Accord whole search (+ benefits)", &accord_search, &accord);
    line("zen-engine decision table (collect)", &table_s, &accord);
    line("zen-expression, one per campaign", &expr_s, &accord);
    line("cel, one program per campaign", &cel_s, &accord);
}

fn main() {
    let filter = std::env::args().nth(1);
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let seed = 42;
    println!(
        "peers: Accord {} vs zen-engine 2.1.6, zen-expression 2.1.6, cel 0.15.0 (seed {seed})",
        env!("CARGO_PKG_VERSION")
    );
    if wants("storefront") {
        run(&workload::storefront(seed), 300, 3);
    }
    if wants("regex") {
        run(&workload::regex_heavy(seed), 300, 3);
    }
    if wants("marketplace") {
        run(&workload::marketplace(seed), 40, 2);
    }
    if wants("scale") {
        run(&workload::scale(seed, 100_000, 0.01), 5, 2);
    }
}
