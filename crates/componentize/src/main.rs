//! `faasched-componentize`: the build tool behind `scripts/build-functions`
//! for the real function suite's wasi:http/proxy components written in C.
//!
//! A C component is built in three steps, the middle one by clang:
//!
//! 1. `bindings` generates the C bindings of a WIT world (`proxy.h`,
//!    `proxy.c` and `proxy_component_type.o`, whose custom section names the
//!    world) from the WIT files in `functions/wit`.
//! 2. clang compiles the function and the bindings into a core module
//!    (`--target=wasm32-wasi -mexec-model=reactor`): a WASI preview 1
//!    module that also imports and exports the world's functions.
//! 3. `new` wraps that core module into a component, adapting its WASI
//!    preview 1 imports to preview 2 with the proxy adapter, and validates it.
//!
//! `describe` lists a component's imports and exports, to check a built one.

mod bindings;
mod describe;
mod new;
mod output;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Build wasi:http/proxy components from C: generate a WIT world's C
/// bindings, then turn the core module clang built against them into a
/// component.
///
/// scripts/build-functions runs `bindings` on functions/wit into
/// target/functions-build/bindings (again only when the WIT files or this
/// tool change), compiles each functions/http/NAME.c together with the
/// bindings' proxy.c and proxy_component_type.o (clang --target=wasm32-wasi
/// -mexec-model=reactor), then runs `new` on each core module to write
/// target/functions/NAME.wasm. `describe` is for checking one by hand.
#[derive(Parser, Debug)]
#[command(name = "faasched-componentize", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What to do; each subcommand's help says more.
#[derive(Subcommand, Debug)]
enum Command {
    Bindings(bindings::Args),
    New(new::Args),
    Describe(describe::Args),
}

/// Runs the command; an error is printed with its causes, one line, and
/// exits 1.
fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Bindings(args) => args.execute(),
        Command::New(args) => args.execute(),
        Command::Describe(args) => args.execute(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("faasched-componentize: {err:#}");
            ExitCode::FAILURE
        }
    }
}
