//! Seeded workload generator shared by the criterion benches and the peers
//! project (`benches/peers`, which includes this file by `#[path]`).
//!
//! Every workload is a pure function of its seed: the same seed gives the
//! same campaigns and requests on every machine, so figures can be compared
//! across runs and engines.
//!
//! Match rates are *designed*: each rule gets a target probability of firing
//! on a random request, spread over its conditions as per-condition
//! selectivities (an `in` list of `m` of `k` equally likely values holds with
//! probability `m/k`, a threshold at a quantile of a numeric input's
//! distribution with the complementary probability, …). The benches measure
//! the resulting rate on the generated requests and print it.
#![allow(
    dead_code,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation
)]
#![allow(
    clippy::cast_sign_loss,
    clippy::too_many_lines,
    clippy::missing_panics_doc
)]

use accord::campaign::{
    Campaign, CampaignStatus, Cart, CartItem, Condition, ConditionType, DataItem, MatchKind, Op,
    Quota, Rule, SearchRequest, Then, ThenOperator, ValueType, WhenGroup,
};
use accord::wire::Scalar;
use chrono::{DateTime, TimeZone, Utc};
use rust_decimal::Decimal;
use serde_json::{Map, Value};

/// The instant every workload is searched at: inside every campaign's period.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

/// SplitMix64: tiny, fast, and the same everywhere (no dependency on a
/// `rand` version).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `m` distinct indices of `0..n`, in random order.
    pub fn sample(&mut self, n: usize, m: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..m.min(n) {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(m.min(n));
        all
    }
}

/// A discrete distribution over `0..n`: uniform, or Zipf with exponent `s`.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Probability of each value.
    pub p: Vec<f64>,
    cdf: Vec<f64>,
}

impl Dist {
    /// Uniform over `0..n`.
    pub fn uniform(n: usize) -> Self {
        Dist::from_weights(&vec![1.0; n])
    }

    /// Zipf over `0..n` with exponent `s` (value 0 the most frequent).
    pub fn zipf(n: usize, s: f64) -> Self {
        Dist::from_weights(
            &(1..=n)
                .map(|k| 1.0 / (k as f64).powf(s))
                .collect::<Vec<_>>(),
        )
    }

    fn from_weights(w: &[f64]) -> Self {
        let total: f64 = w.iter().sum();
        let p: Vec<f64> = w.iter().map(|x| x / total).collect();
        let mut acc = 0.0;
        let cdf = p
            .iter()
            .map(|x| {
                acc += x;
                acc
            })
            .collect();
        Dist { p, cdf }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.p.len()
    }

    /// A random value.
    pub fn draw(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c <= u).min(self.p.len() - 1)
    }

    /// Values whose probabilities add up to about `s` (random ones, never
    /// more than `max`), and their total probability.
    pub fn subset(&self, rng: &mut Rng, s: f64, max: usize) -> (Vec<usize>, f64) {
        let mut chosen = Vec::new();
        let mut mass = 0.0;
        for v in rng.sample(self.len(), self.len()) {
            if chosen.len() >= max || mass >= s * 0.95 {
                break;
            }
            // Skip values that would overshoot by far (the Zipf head).
            if mass + self.p[v] > s * 1.6 && !chosen.is_empty() {
                continue;
            }
            if self.p[v] > s * 1.6 && chosen.is_empty() && self.p.iter().any(|&x| x <= s * 1.6) {
                continue;
            }
            chosen.push(v);
            mass += self.p[v];
        }
        if chosen.is_empty() {
            chosen.push(rng.below(self.len()));
            mass = self.p[chosen[0]];
        }
        (chosen, mass)
    }
}

/// A discrete custom attribute: its name and the distribution of its values
/// (value `i` is the text `"{prefix}{i}"`).
#[derive(Debug, Clone)]
pub struct Discrete {
    /// Attribute name.
    pub name: String,
    /// Value text prefix.
    pub prefix: String,
    /// Value distribution.
    pub dist: Dist,
}

impl Discrete {
    fn value(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }
}

/// A generated workload: campaigns, and requests to search them with.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Short name (`storefront`, `marketplace`, `scale-1%`, `regex`).
    pub name: String,
    /// The designed match rate (fraction of campaigns per request).
    pub target_rate: f64,
    /// The campaigns, stored-campaign shaped.
    pub campaigns: Vec<Campaign>,
    /// The requests.
    pub requests: Vec<SearchRequest>,
}

// ---------------------------------------------------------------- building

fn cond(kind: ConditionType, attribute: &str, op: Op, value: String, number: bool) -> Condition {
    Condition {
        kind,
        attribute: attribute.to_owned(),
        op,
        value,
        value_type: if number {
            ValueType::Number
        } else {
            ValueType::String
        },
        note: None,
        resolve_action: false,
    }
}

fn list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("({})", quoted.join(","))
}

/// `eq` for one value, `in` for several.
fn eq_or_in(kind: ConditionType, attribute: &str, values: &[String]) -> Condition {
    if values.len() == 1 {
        cond(kind, attribute, Op::Eq, values[0].clone(), false)
    } else {
        cond(kind, attribute, Op::In, list(values), false)
    }
}

fn campaign(
    rng: &mut Rng,
    i: usize,
    rules: Vec<Rule>,
    channel: Option<&str>,
    quota: bool,
) -> Campaign {
    let t = |y, m, d| Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap();
    let code = format!("C{i:06}");
    Campaign {
        id: uuid::Uuid::from_u128(u128::from(rng.next_u64()) << 64 | i as u128),
        name: format!("Campaign {i}"),
        description: None,
        image_url: Some(format!("https://img.example/{code}.png")),
        start_date: t(2026, 1, 1),
        end_date: t(2027, 1, 1),
        ref_code: code,
        status: CampaignStatus::Enable,
        priority: i32::try_from(rng.range(1, 10)).unwrap(),
        channel: channel.map(str::to_owned),
        group_name: None,
        stacking: None,
        time_zone: None,
        status_schedule: Vec::new(),
        quotas: if quota {
            vec![Quota {
                id: None,
                key: "${campaignCode}-${userId}".to_owned(),
                value: Decimal::from(5),
                value_field: None,
                description: None,
                window: None,
            }]
        } else {
            vec![]
        },
        rules,
        project_id: "bench".to_owned(),
        version: 1,
        active: true,
        created_by: "bench".to_owned(),
        last_modified_by: "bench".to_owned(),
        created_date: t(2026, 1, 1),
        last_modified_date: t(2026, 1, 1),
    }
}

fn rule(rng: &mut Rng, c: usize, r: usize, conditions: Vec<Condition>) -> Rule {
    let mut data = vec![DataItem::text("percent", &format!("{}", 5 + rng.below(30)))];
    if rng.chance(0.2) {
        data.push(DataItem::formula("amount", "${totalPrice} * 0.05"));
    }
    Rule {
        id: format!("r{c}-{r}"),
        name: format!("rule {r}"),
        description: None,
        when: vec![WhenGroup {
            match_kind: MatchKind::All,
            conditions,
        }],
        then_operator: ThenOperator::And,
        then: vec![Then {
            action: Some("DISCOUNT".to_owned()),
            internal_action: false,
            action_ref: format!("a{c}-{r}"),
            data,
            ..Then::default()
        }],
        valid_from: None,
        valid_to: None,
    }
}

/// The per-rule firing probability that makes a campaign of `rules` rules
/// fire with probability `p`.
fn per_rule(p: f64, rules: usize) -> f64 {
    1.0 - (1.0 - p).powf(1.0 / rules as f64)
}

/// The `q`-quantile of sorted samples.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q.clamp(0.0, 1.0)).round() as usize;
    sorted[i]
}

/// A numeric input and its sampled distribution (sorted).
struct Numeric {
    kind: ConditionType,
    attribute: &'static str,
    samples: Vec<f64>,
    /// Per item rather than per request: "some item has …".
    per_item: bool,
}

impl Numeric {
    /// `attribute >= t` holding with probability `s` on a request (for item
    /// inputs: for some of `items` items), or `<=` half of the time.
    fn condition(&self, rng: &mut Rng, s: f64, items: usize) -> Condition {
        let s = if self.per_item {
            1.0 - (1.0 - s).powf(1.0 / items as f64)
        } else {
            s
        };
        let (op, value) = if rng.chance(0.5) {
            (Op::Gte, quantile(&self.samples, 1.0 - s))
        } else {
            (Op::Lte, quantile(&self.samples, s))
        };
        cond(self.kind.clone(), self.attribute, op, fmt_num(value), true)
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn num(v: f64) -> Value {
    if v.fract() == 0.0 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

fn scalar_num(v: f64) -> Scalar {
    match num(v) {
        Value::Number(n) => Scalar::Number(n),
        _ => Scalar::Text(v.to_string()),
    }
}

// ---------------------------------------------------------------- storefront

/// The request shape shared by storefront and regex-heavy.
struct Shop {
    discrete: Vec<Discrete>,
    skus: Dist,
    tags: Dist,
    items: usize,
    tags_per_item: usize,
}

impl Shop {
    fn storefront() -> Self {
        let d = |name: &str, prefix: &str, n| Discrete {
            name: name.to_owned(),
            prefix: prefix.to_owned(),
            dist: Dist::uniform(n),
        };
        Shop {
            discrete: vec![
                d("country", "C", 20),
                d("tier", "T", 4),
                d("segment", "S", 10),
                d("device", "D", 3),
                d("lang", "L", 5),
                d("store", "ST", 50),
            ],
            skus: Dist::uniform(500),
            tags: Dist::uniform(40),
            items: 5,
            tags_per_item: 5,
        }
    }

    fn promo(rng: &mut Rng) -> String {
        match rng.below(4) {
            0 => format!("SAVE{}", rng.below(100)),
            1 => format!("WELCOME{}", rng.below(1000)),
            2 => format!("VIP-{}", rng.below(50)),
            _ => String::new(),
        }
    }

    fn request(&self, rng: &mut Rng, user: usize) -> SearchRequest {
        let mut attribute = Map::new();
        attribute.insert("userId".into(), Value::from(format!("u{user}")));
        for d in &self.discrete {
            attribute.insert(d.name.clone(), Value::from(d.value(d.dist.draw(rng))));
        }
        attribute.insert("points".into(), Value::from(rng.below(10_001)));
        attribute.insert("age".into(), Value::from(rng.range(18, 80)));
        attribute.insert("orders".into(), Value::from(rng.below(101)));
        attribute.insert("promoCode".into(), Value::from(Shop::promo(rng)));
        let mut total = 0.0;
        let items: Vec<CartItem> = (0..self.items)
            .map(|_| {
                let price = (rng.range(100, 20_000) as f64) / 10.0;
                let amount = rng.range(1, 5);
                total += price * amount as f64;
                let mut tags: Vec<usize> = Vec::new();
                while tags.len() < self.tags_per_item {
                    let t = self.tags.draw(rng);
                    if !tags.contains(&t) {
                        tags.push(t);
                    }
                }
                CartItem {
                    name: Some("item".to_owned()),
                    sku: Some(Scalar::Text(format!("SKU-{}", self.skus.draw(rng)))),
                    amount: Some(Scalar::Number(amount.into())),
                    price: Some(scalar_num(price)),
                    tags: tags.into_iter().map(|t| format!("tag{t}")).collect(),
                }
            })
            .collect();
        SearchRequest {
            name: Some("cart_view".into()),
            channel: Some(if rng.chance(0.5) { "web" } else { "app" }.to_owned()),
            attribute,
            cart: Cart {
                total_price: Some(scalar_num((total * 100.0).round() / 100.0)),
                currency: Some(Scalar::Text("THB".into())),
                items,
            },
        }
    }

    /// Numeric inputs with their distributions, sampled from requests.
    fn numerics(&self, seed: u64) -> Vec<Numeric> {
        let mut rng = Rng::new(seed ^ 0xA11CE);
        let reqs: Vec<SearchRequest> = (0..2000).map(|u| self.request(&mut rng, u)).collect();
        let sorted = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v
        };
        let attr = |r: &SearchRequest, a: &str| r.attribute[a].as_f64().unwrap();
        let sc = |s: &Option<Scalar>| {
            s.as_ref()
                .unwrap()
                .to_decimal()
                .unwrap()
                .to_string()
                .parse::<f64>()
                .unwrap()
        };
        vec![
            Numeric {
                kind: ConditionType::Cart,
                attribute: "totalPrice",
                samples: sorted(reqs.iter().map(|r| sc(&r.cart.total_price)).collect()),
                per_item: false,
            },
            Numeric {
                kind: ConditionType::Custom,
                attribute: "points",
                samples: sorted(reqs.iter().map(|r| attr(r, "points")).collect()),
                per_item: false,
            },
            Numeric {
                kind: ConditionType::Custom,
                attribute: "age",
                samples: sorted(reqs.iter().map(|r| attr(r, "age")).collect()),
                per_item: false,
            },
            Numeric {
                kind: ConditionType::Custom,
                attribute: "orders",
                samples: sorted(reqs.iter().map(|r| attr(r, "orders")).collect()),
                per_item: false,
            },
            Numeric {
                kind: ConditionType::CartItem,
                attribute: "price",
                samples: sorted(
                    reqs.iter()
                        .flat_map(|r| r.cart.items.iter().map(|i| sc(&i.price)))
                        .collect(),
                ),
                per_item: true,
            },
            Numeric {
                kind: ConditionType::CartItem,
                attribute: "amount",
                samples: sorted(
                    reqs.iter()
                        .flat_map(|r| r.cart.items.iter().map(|i| sc(&i.amount)))
                        .collect(),
                ),
                per_item: true,
            },
        ]
    }
}

/// The regex patterns of the promo code and their match probability.
const PROMO_PATTERNS: [(&str, f64); 4] = [
    ("SAVE[0-9]+", 0.25),
    ("(SAVE|WELCOME)[0-9]{1,3}", 0.5),
    ("VIP-[0-9]{1,2}", 0.25),
    ("[A-Z]+[0-9]*", 0.5),
];

/// One storefront condition of one of the four kinds, of selectivity about
/// `s`; returns it and its real selectivity.
fn shop_condition(
    rng: &mut Rng,
    shop: &Shop,
    numerics: &[Numeric],
    kind: u8,
    s: f64,
) -> (Condition, f64) {
    match kind {
        // eq/in on a discrete attribute
        0 => {
            let d = &shop.discrete[rng.below(shop.discrete.len())];
            let (vals, mass) = d.dist.subset(rng, s, 50);
            let vals: Vec<String> = vals.into_iter().map(|v| d.value(v)).collect();
            (eq_or_in(ConditionType::Custom, &d.name, &vals), mass)
        }
        // numeric range
        1 => {
            let n = &numerics[rng.below(numerics.len())];
            (n.condition(rng, s, shop.items), s)
        }
        // sku in a list, or a tag
        2 => {
            if rng.chance(0.6) {
                let per_item = 1.0 - (1.0 - s).powf(1.0 / shop.items as f64);
                let (vals, _) = shop.skus.subset(rng, per_item, 50);
                let mass: f64 = vals.iter().map(|&v| shop.skus.p[v]).sum();
                let vals: Vec<String> = vals.into_iter().map(|v| format!("SKU-{v}")).collect();
                let real = 1.0 - (1.0 - mass).powf(shop.items as f64);
                (eq_or_in(ConditionType::CartItem, "sku", &vals), real)
            } else {
                let t = rng.below(shop.tags.len());
                let per_item = shop.tags_per_item as f64 / shop.tags.len() as f64;
                let real = 1.0 - (1.0 - per_item).powf(shop.items as f64);
                (
                    cond(
                        ConditionType::CartItem,
                        "tags",
                        Op::Contains,
                        format!("tag{t}"),
                        false,
                    ),
                    real,
                )
            }
        }
        // regex or not_in
        _ => {
            if rng.chance(0.5) {
                let (p, real) = PROMO_PATTERNS[rng.below(PROMO_PATTERNS.len())];
                (
                    cond(
                        ConditionType::Custom,
                        "promoCode",
                        Op::Matches,
                        p.to_owned(),
                        false,
                    ),
                    real,
                )
            } else {
                let d = &shop.discrete[rng.below(shop.discrete.len())];
                let (vals, mass) = d.dist.subset(rng, 0.15, 50);
                let vals: Vec<String> = vals.into_iter().map(|v| d.value(v)).collect();
                (
                    cond(
                        ConditionType::Custom,
                        &d.name,
                        Op::NotIn,
                        list(&vals),
                        false,
                    ),
                    1.0 - mass,
                )
            }
        }
    }
}

/// Conditions for one rule of firing probability `p`: `n` kinds drawn by
/// `mix`, the tunable ones sharing what the fixed ones leave.
fn shop_rule_conditions(
    rng: &mut Rng,
    shop: &Shop,
    numerics: &[Numeric],
    n: usize,
    p: f64,
    mix: &dyn Fn(&mut Rng) -> u8,
) -> Vec<Condition> {
    let kinds: Vec<u8> = (0..n).map(|_| mix(rng)).collect();
    let mut conds = Vec::with_capacity(n);
    let mut budget = p;
    // Fixed-selectivity kinds first (regex, not_in, tags): they spend budget.
    let mut tunable = Vec::new();
    for &k in &kinds {
        if k == 3 {
            let (c, real) = shop_condition(rng, shop, numerics, k, 1.0);
            budget /= real;
            conds.push(c);
        } else {
            tunable.push(k);
        }
    }
    let budget = budget.min(1.0);
    let s = budget.powf(1.0 / tunable.len().max(1) as f64);
    for k in tunable {
        let (c, _) = shop_condition(rng, shop, numerics, k, s);
        conds.push(c);
    }
    // Shuffle so the fixed kinds are not always first.
    let order = rng.sample(conds.len(), conds.len());
    order.into_iter().map(|i| conds[i].clone()).collect()
}

fn storefront_mix(rng: &mut Rng) -> u8 {
    let u = rng.unit();
    if u < 0.4 {
        0
    } else if u < 0.7 {
        1
    } else if u < 0.9 {
        2
    } else {
        3
    }
}

/// Storefront: 200 campaigns, 1–3 rules, about 4 conditions a rule (40%
/// eq/in on attributes, 30% numeric ranges, 20% sku/tags, 10% regex or
/// not_in), carts of 5 items with 5 tags, 10 attributes; about 5% match.
pub fn storefront(seed: u64) -> Workload {
    shop_workload(seed, "storefront", 200, 0.05, 1000, &storefront_mix)
}

/// Storefront at another size: `n` campaigns of the storefront's shape
/// designed to match `rate` (at 20,000 campaigns and 1.8% designed, 2.52%
/// measured: about 505 hits a request).
pub fn storefront_sized(seed: u64, n: usize, rate: f64) -> Workload {
    shop_workload(
        seed,
        &format!("storefront-{n}"),
        n,
        rate,
        1000,
        &storefront_mix,
    )
}

/// Regex-heavy: like storefront, but every rule has a regex or not_in
/// condition and half of the other conditions are regexes too.
pub fn regex_heavy(seed: u64) -> Workload {
    shop_workload(seed, "regex-heavy", 200, 0.05, 1000, &|rng: &mut Rng| {
        if rng.chance(0.6) {
            3
        } else {
            storefront_mix(rng)
        }
    })
}

fn shop_workload(
    seed: u64,
    name: &str,
    n: usize,
    rate: f64,
    requests: usize,
    mix: &dyn Fn(&mut Rng) -> u8,
) -> Workload {
    let shop = Shop::storefront();
    let numerics = shop.numerics(seed);
    let mut rng = Rng::new(seed);
    let campaigns = (0..n)
        .map(|c| {
            let rules = rng.range(1, 3);
            // A campaign on one channel sees half of the requests: double its rules' odds.
            let channel = match rng.below(8) {
                0 => Some("web"),
                1 => Some("app"),
                _ => None,
            };
            let p = per_rule(if channel.is_some() { rate * 2.0 } else { rate }, rules);
            let rules = (0..rules)
                .map(|r| {
                    let k = rng.range(3, 5);
                    let conds = shop_rule_conditions(&mut rng, &shop, &numerics, k, p, mix);
                    rule(&mut rng, c, r, conds)
                })
                .collect();
            let quota = rng.chance(0.8);
            campaign(&mut rng, c, rules, channel, quota)
        })
        .collect();
    let mut rng = Rng::new(seed ^ 0xBEEF);
    let requests = (0..requests).map(|u| shop.request(&mut rng, u)).collect();
    Workload {
        name: name.to_owned(),
        target_rate: rate,
        campaigns,
        requests,
    }
}

// ---------------------------------------------------------------- marketplace

/// Marketplace: 10,000 campaigns of 3–8 conditions over Zipf-skewed
/// attributes, `in` lists of up to 50 SKUs, carts of 30 items; 1–2% match.
pub fn marketplace(seed: u64) -> Workload {
    let names = [
        ("region", 30),
        ("city", 200),
        ("seller", 500),
        ("category", 60),
        ("brand", 300),
        ("tier", 5),
        ("segment", 40),
        ("device", 4),
        ("source", 12),
        ("cohort", 24),
    ];
    let discrete: Vec<Discrete> = names
        .iter()
        .map(|&(name, n)| Discrete {
            name: name.to_owned(),
            prefix: format!("{}-", &name[..3]),
            dist: Dist::zipf(n, 1.1),
        })
        .collect();
    let skus = Dist::zipf(20_000, 0.9);
    let tags = Dist::zipf(200, 1.0);
    let items = 30;
    let request = |rng: &mut Rng, user: usize| -> SearchRequest {
        let mut attribute = Map::new();
        attribute.insert("userId".into(), Value::from(format!("u{user}")));
        for d in &discrete {
            attribute.insert(d.name.clone(), Value::from(d.value(d.dist.draw(rng))));
        }
        attribute.insert("points".into(), Value::from(rng.below(50_001)));
        let mut total = 0.0;
        let cart_items = (0..items)
            .map(|_| {
                let price = rng.range(50, 50_000) as f64 / 10.0;
                let amount = rng.range(1, 3);
                total += price * amount as f64;
                let mut t: Vec<String> = Vec::new();
                while t.len() < 3 {
                    let s = format!("tag{}", tags.draw(rng));
                    if !t.contains(&s) {
                        t.push(s);
                    }
                }
                CartItem {
                    name: None,
                    sku: Some(Scalar::Text(format!("SKU-{}", skus.draw(rng)))),
                    amount: Some(Scalar::Number(amount.into())),
                    price: Some(scalar_num(price)),
                    tags: t,
                }
            })
            .collect();
        SearchRequest {
            name: None,
            channel: None,
            attribute,
            cart: Cart {
                total_price: Some(scalar_num((total * 100.0).round() / 100.0)),
                currency: Some(Scalar::Text("THB".into())),
                items: cart_items,
            },
        }
    };
    // Sampled distributions of the numeric inputs.
    let mut srng = Rng::new(seed ^ 0xA11CE);
    let sample: Vec<SearchRequest> = (0..1000).map(|u| request(&mut srng, u)).collect();
    let mut total: Vec<f64> = sample
        .iter()
        .map(|r| {
            r.cart
                .total_price
                .as_ref()
                .unwrap()
                .to_string()
                .parse()
                .unwrap()
        })
        .collect();
    total.sort_by(f64::total_cmp);
    let mut points: Vec<f64> = sample
        .iter()
        .map(|r| r.attribute["points"].as_f64().unwrap())
        .collect();
    points.sort_by(f64::total_cmp);
    let mut price: Vec<f64> = sample
        .iter()
        .flat_map(|r| {
            r.cart
                .items
                .iter()
                .map(|i| i.price.as_ref().unwrap().to_string().parse().unwrap())
        })
        .collect();
    price.sort_by(f64::total_cmp);
    let numerics = [
        Numeric {
            kind: ConditionType::Cart,
            attribute: "totalPrice",
            samples: total,
            per_item: false,
        },
        Numeric {
            kind: ConditionType::Custom,
            attribute: "points",
            samples: points,
            per_item: false,
        },
        Numeric {
            kind: ConditionType::CartItem,
            attribute: "price",
            samples: price,
            per_item: true,
        },
    ];
    let rate = 0.015;
    let mut rng = Rng::new(seed);
    let campaigns = (0..10_000)
        .map(|c| {
            let rules = if rng.chance(0.8) { 1 } else { 2 };
            let p = per_rule(rate, rules);
            let rules = (0..rules)
                .map(|r| {
                    let n = rng.range(3, 8);
                    // Kinds: 0 attribute eq/in, 1 numeric, 2 sku list, 3 tag, 4 not_in.
                    let kinds: Vec<u8> = (0..n)
                        .map(|_| {
                            let u = rng.unit();
                            if u < 0.5 {
                                0
                            } else if u < 0.7 {
                                1
                            } else if u < 0.85 {
                                2
                            } else if u < 0.92 {
                                3
                            } else {
                                4
                            }
                        })
                        .collect();
                    let mut budget = p;
                    let mut conds = Vec::new();
                    let mut tunable = Vec::new();
                    for &k in &kinds {
                        match k {
                            3 => {
                                // A popular-ish tag on some item of 30.
                                let t = rng.below(20);
                                let per_item = 1.0 - (1.0 - tags.p[t]).powf(3.0);
                                budget /= 1.0 - (1.0 - per_item).powf(items as f64);
                                conds.push(cond(
                                    ConditionType::CartItem,
                                    "tags",
                                    Op::Contains,
                                    format!("tag{t}"),
                                    false,
                                ));
                            }
                            4 => {
                                let d = &discrete[rng.below(discrete.len())];
                                let (vals, mass) = d.dist.subset(&mut rng, 0.1, 50);
                                budget /= 1.0 - mass;
                                let vals: Vec<String> =
                                    vals.into_iter().map(|v| d.value(v)).collect();
                                conds.push(cond(
                                    ConditionType::Custom,
                                    &d.name,
                                    Op::NotIn,
                                    list(&vals),
                                    false,
                                ));
                            }
                            _ => tunable.push(k),
                        }
                    }
                    let s = budget.min(1.0).powf(1.0 / tunable.len().max(1) as f64);
                    for k in tunable {
                        match k {
                            0 => {
                                let d = &discrete[rng.below(discrete.len())];
                                let (vals, _) = d.dist.subset(&mut rng, s, 50);
                                let vals: Vec<String> =
                                    vals.into_iter().map(|v| d.value(v)).collect();
                                conds.push(eq_or_in(ConditionType::Custom, &d.name, &vals));
                            }
                            1 => {
                                let n = &numerics[rng.below(numerics.len())];
                                conds.push(n.condition(&mut rng, s, items));
                            }
                            _ => {
                                let per_item = 1.0 - (1.0 - s).powf(1.0 / items as f64);
                                let (vals, _) = skus.subset(&mut rng, per_item, 50);
                                let vals: Vec<String> =
                                    vals.into_iter().map(|v| format!("SKU-{v}")).collect();
                                conds.push(eq_or_in(ConditionType::CartItem, "sku", &vals));
                            }
                        }
                    }
                    let order = rng.sample(conds.len(), conds.len());
                    let conds = order.into_iter().map(|i| conds[i].clone()).collect();
                    rule(&mut rng, c, r, conds)
                })
                .collect();
            let quota = rng.chance(0.8);
            campaign(&mut rng, c, rules, None, quota)
        })
        .collect();
    let mut rng = Rng::new(seed ^ 0xBEEF);
    let requests = (0..500).map(|u| request(&mut rng, u)).collect();
    Workload {
        name: "marketplace".to_owned(),
        target_rate: rate,
        campaigns,
        requests,
    }
}

// ---------------------------------------------------------------- scale

/// Scale: `n` campaigns of one rule with 2–6 eq/in predicates over 40
/// discrete attributes (2 to 64 values each), designed to match `rate`.
pub fn scale(seed: u64, n: usize, rate: f64) -> Workload {
    let (mut w, campaigns) = scale_stream(seed, n, rate);
    w.campaigns = campaigns.collect();
    w
}

/// The scale workload with its campaigns not yet generated: the workload
/// (requests, no campaigns) and an iterator that generates the campaigns
/// one at a time, the same ones, in the same order, as [`scale`] holds, so
/// that a caller can compile each and drop its input before the next.
pub fn scale_stream(
    seed: u64,
    n: usize,
    rate: f64,
) -> (Workload, impl ExactSizeIterator<Item = Campaign>) {
    let mut rng = Rng::new(seed ^ 0x5CA1E);
    let attrs: Vec<Discrete> = (0..40)
        .map(|a| {
            let k = rng.range(2, 64);
            Discrete {
                name: format!("a{a:02}"),
                prefix: format!("v{a}-"),
                dist: if a % 2 == 0 {
                    Dist::uniform(k)
                } else {
                    Dist::zipf(k, 0.8)
                },
            }
        })
        .collect();
    // Requests and campaigns draw from generators of their own, so
    // generating the requests first leaves the campaigns unchanged.
    let mut rng = Rng::new(seed ^ 0xBEEF);
    let requests = (0..200)
        .map(|u| {
            let mut attribute = Map::new();
            attribute.insert("userId".into(), Value::from(format!("u{u}")));
            for d in &attrs {
                attribute.insert(d.name.clone(), Value::from(d.value(d.dist.draw(&mut rng))));
            }
            SearchRequest {
                name: None,
                channel: None,
                attribute,
                cart: Cart {
                    total_price: Some(Scalar::Number(100.into())),
                    currency: Some(Scalar::Text("THB".into())),
                    items: vec![],
                },
            }
        })
        .collect();
    let mut rng = Rng::new(seed);
    let campaigns = (0..n).map(move |c| {
        let k = rng.range(2, 6);
        let s = rate.powf(1.0 / k as f64);
        let conds = rng
            .sample(attrs.len(), k)
            .into_iter()
            .map(|a| {
                let d = &attrs[a];
                let (vals, _) = d.dist.subset(&mut rng, s, 50);
                let vals: Vec<String> = vals.into_iter().map(|v| d.value(v)).collect();
                eq_or_in(ConditionType::Custom, &d.name, &vals)
            })
            .collect();
        let r = rule(&mut rng, c, 0, conds);
        let quota = rng.chance(0.5);
        campaign(&mut rng, c, vec![r], None, quota)
    });
    let w = Workload {
        name: format!("scale-{}", pct(rate)),
        target_rate: rate,
        campaigns: Vec::new(),
        requests,
    };
    (w, campaigns)
}

/// `0.01` as `1%`, `0.0001` as `0.01%`.
pub fn pct(rate: f64) -> String {
    let s = format!("{:.4}", rate * 100.0);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

// ---------------------------------------------------------------- timing

/// Median, p99 and mean of per-search times, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean (searches per second on one core is `1e6 / mean`).
    pub mean: f64,
    /// Samples.
    pub n: usize,
}

impl Stats {
    /// Statistics of samples in nanoseconds.
    pub fn of(mut ns: Vec<u64>) -> Stats {
        ns.sort_unstable();
        let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
        Stats {
            median: at(0.5),
            p99: at(0.99),
            mean: ns.iter().sum::<u64>() as f64 / ns.len() as f64 / 1000.0,
            n: ns.len(),
        }
    }

    /// Searches per second on one core.
    pub fn per_second(&self) -> f64 {
        1e6 / self.mean
    }
}

/// Times `f` on each request in turn, `rounds` times over, after one warm-up
/// pass; returns per-call statistics.
pub fn time_each<R>(requests: &[R], rounds: usize, mut f: impl FnMut(&R)) -> Stats {
    for r in requests.iter().take(50) {
        f(r);
    }
    let mut ns = Vec::with_capacity(requests.len() * rounds);
    for _ in 0..rounds {
        for r in requests {
            let t = std::time::Instant::now();
            f(r);
            ns.push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
    }
    Stats::of(ns)
}
