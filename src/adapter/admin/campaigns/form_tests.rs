//! Tests of the editor's form model.
use super::*;

fn form(pairs: &[(&str, &str)]) -> Form {
    Form(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

#[test]
fn a_form_round_trips_through_the_input() {
    let utc = FixedOffset::east_opt(0).expect("utc");
    let f = form(&[
        ("name", "Shoes"),
        ("refCode", "SHOES"),
        ("startDate", "2026-01-01T00:00"),
        ("endDate", "2027-01-01T00:00"),
        ("priority", "2"),
        ("quotas[0].key", "${campaignCode}-${userId}"),
        ("quotas[0].value", "1"),
        ("rules[0].name", "r"),
        ("rules[0].thenOperator", "OR"),
        ("rules[0].when[0].match", "ANY"),
        ("rules[0].when[0].conditions[0].type", "cartItem"),
        ("rules[0].when[0].conditions[0].attribute", "tags"),
        ("rules[0].when[0].conditions[0].op", "contains"),
        ("rules[0].when[0].conditions[0].value", "shoes"),
        ("rules[0].when[0].conditions[0].valueType", "STRING"),
        ("rules[0].then[0].action", "DISCOUNT"),
        ("rules[0].then[0].data[0].attribute", "amount"),
        ("rules[0].then[0].data[0].value", "${totalPrice} * 0.1"),
        ("rules[0].then[0].data[0].isFormula", "on"),
    ]);
    let (input, problems) = Draft::from_form(&f).to_input(utc);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(input.priority, Some(2));
    assert_eq!(input.rules[0].then_operator, ThenOperator::Or);
    assert_eq!(input.rules[0].when[0].match_kind, MatchKind::Any);
    assert!(input.rules[0].then[0].data[0].is_formula);
    let back = Draft::of(&input, utc);
    assert_eq!(back.start, "2026-01-01T00:00");
    assert_eq!(back.rules[0].when[0].conditions[0].attribute, "tags");
}

#[test]
fn unreadable_numbers_and_times_are_field_errors() {
    let utc = FixedOffset::east_opt(0).expect("utc");
    let f = form(&[
        ("priority", "high"),
        ("startDate", "soon"),
        ("quotas[3].key", "k"),
        ("quotas[3].value", "lots"),
    ]);
    let draft = Draft::from_form(&f);
    let (_, problems) = draft.to_input(utc);
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["startDate", "priority", "quotas[0].value"]);
    // What was typed stays.
    assert_eq!(draft.quotas[0].value, "lots");
}

#[test]
fn structural_edits() {
    let mut d = Draft::blank();
    d.apply("add-condition:0:0");
    d.apply("add-group:0");
    d.apply("add-data:0:0");
    assert_eq!(d.rules[0].when[0].conditions.len(), 2);
    assert_eq!(d.rules[0].when.len(), 2);
    assert_eq!(d.rules[0].then[0].data.len(), 2);
    d.apply("remove-condition:0:0:1");
    d.apply("remove-group:0:1");
    d.apply("remove-rule:7");
    d.apply("nonsense:1:2");
    assert_eq!(d.rules[0].when.len(), 1);
    assert_eq!(d.rules[0].when[0].conditions.len(), 1);
    d.apply("add-quota");
    assert_eq!(d.quotas[0].key, "${campaignCode}-${userId}");
}

#[test]
fn fields_the_form_does_not_edit_survive_a_round_trip() {
    let utc = FixedOffset::east_opt(0).expect("utc");
    let f = form(&[
        ("rules[0].when[0].conditions[0].type", "custom"),
        ("rules[0].when[0].conditions[0].note", "kept"),
        ("rules[0].when[0].conditions[0].resolveAction", "true"),
        ("rules[0].then[0].data[0].attribute", "grade"),
        ("rules[0].then[0].data[0].type", "custom"),
        ("rules[0].then[0].data[0].resolveAction", "true"),
    ]);
    let (input, _) = Draft::from_form(&f).to_input(utc);
    let c = &input.rules[0].when[0].conditions[0];
    assert!(c.resolve_action);
    assert_eq!(c.note.as_deref(), Some("kept"));
    let d = &input.rules[0].then[0].data[0];
    assert!(d.resolve_action);
    assert_eq!(d.kind.as_deref(), Some("custom"));
    let back = Draft::of(&input, utc);
    assert!(back.rules[0].when[0].conditions[0].resolve_action);
    assert!(back.rules[0].then[0].data[0].resolve_action);
}

#[test]
fn caps_and_allocation_survive_the_editor() {
    let utc = FixedOffset::east_opt(0).expect("utc");
    let input: CampaignInput = serde_json::from_value(serde_json::json!({
        "name": "n", "refCode": "C",
        "rules": [{"name": "r", "then": [
            {"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "10"}],
             "cap": {"max": "12.50", "scope": "CART"}, "allocate": "PROPORTIONAL"},
            {"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "10"}], "cap": {}},
            {"action": "FREE_GIFT", "data": [{"attribute": "sku", "value": "G"}]}
        ]}]
    }))
    .expect("input");
    let (back, problems) = Draft::of(&input, utc).to_input(utc);
    assert!(problems.is_empty(), "{problems:?}");
    let thens = &back.rules[0].then;
    assert_eq!(thens[0].cap, input.rules[0].then[0].cap);
    assert_eq!(thens[0].allocate, input.rules[0].then[0].allocate);
    assert_eq!(
        thens[1].cap,
        Some(BenefitCap::default()),
        "an empty cap stays a cap"
    );
    assert_eq!(
        (thens[2].cap.as_ref(), thens[2].allocate.as_ref()),
        (None, None)
    );

    let f = form(&[
        ("rules[0].then[0].data[0].attribute", "amount"),
        ("rules[0].then[0].cap.max", "a lot"),
    ]);
    let (_, problems) = Draft::from_form(&f).to_input(utc);
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["rules[0].then[0].cap.max"]);
}

#[test]
fn stacking_survives_the_editor() {
    let utc = FixedOffset::east_opt(0).expect("utc");
    let f = form(&[
        ("name", "n"),
        ("stacking.exclusive", "on"),
        ("stacking.group", " shipping "),
        ("timeZone", " Europe/Berlin "),
    ]);
    let (input, problems) = Draft::from_form(&f).to_input(utc);
    assert!(problems.is_empty(), "{problems:?}");
    let want = Stacking {
        exclusive: true,
        group: Some("shipping".into()),
        stop_after: false,
    };
    assert_eq!(input.stacking.as_ref(), Some(&want));
    let (back, _) = Draft::of(&input, utc).to_input(utc);
    assert_eq!(back.stacking, Some(want));
    assert_eq!(back.time_zone.as_deref(), Some("Europe/Berlin"));
    let (plain, _) = Draft::from_form(&form(&[("name", "n")])).to_input(utc);
    assert_eq!(plain.stacking, None, "nothing ticked: no stacking at all");
}
