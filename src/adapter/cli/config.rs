//! The `--config` TOML file: each key is the long name of a flag, and
//! fills that flag when neither the command line nor the environment set
//! it. Keys of other subcommands are allowed (one file serves `serve`,
//! `migrate` and `token`); a key no subcommand knows is an error, so a
//! typo is not silently ignored.

use std::collections::BTreeSet;
use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{CommandFactory as _, Parser as _};

use super::{BoxError, Cli};

/// Parses `argv`, then again with the file's settings appended as flags
/// for those the command line and environment left unset.
pub(super) fn parse(argv: Vec<OsString>) -> Result<Cli, BoxError> {
    let cli = Cli::try_parse_from(&argv)?;
    let Some(path) = cli.config.clone() else {
        return Ok(cli);
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let command = Cli::command();
    let matches = command.clone().try_get_matches_from(&argv)?;
    let (sub, sub_matches) = match matches.subcommand() {
        Some((name, m)) => (
            command
                .find_subcommand(name)
                .ok_or("unknown subcommand")?
                .clone(),
            m.clone(),
        ),
        None => (command.clone(), matches.clone()),
    };
    let known: BTreeSet<String> = std::iter::once(&command)
        .chain(command.get_subcommands())
        .flat_map(|c| c.get_arguments().filter_map(|a| a.get_long()))
        .map(str::to_owned)
        .collect();
    let mut extra: Vec<OsString> = Vec::new();
    for (key, value) in table {
        if !known.contains(&key) || key == "config" {
            return Err(format!("{}: unknown setting {key:?}", path.display()).into());
        }
        let Some(arg) = sub.get_arguments().find(|a| a.get_long() == Some(&key)) else {
            continue;
        };
        if matches!(
            sub_matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let values = match value {
            toml::Value::Array(items) => items,
            single => vec![single],
        };
        for value in values {
            match value {
                toml::Value::Boolean(true) => extra.push(format!("--{key}").into()),
                toml::Value::Boolean(false) => {}
                toml::Value::String(s) => extra.push(format!("--{key}={s}").into()),
                toml::Value::Integer(n) => extra.push(format!("--{key}={n}").into()),
                toml::Value::Float(x) => extra.push(format!("--{key}={x}").into()),
                other => {
                    return Err(format!(
                        "{}: {key} = {}: expected a string, a number, a boolean or a list",
                        path.display(),
                        other.type_str()
                    )
                    .into())
                }
            }
        }
    }
    if extra.is_empty() {
        return Ok(cli);
    }
    let mut argv = argv;
    argv.extend(extra);
    Ok(Cli::try_parse_from(&argv).map_err(|e| format!("{}: {e}", path.display()))?)
}
