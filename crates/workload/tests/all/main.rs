//! Integration tests of `faasched-workload`: the workload CSV, load scaling, the
//! production trace readers against hand-made fixtures, fuzzing of every
//! reader, and node requests.

mod azure2019;
mod azure2021;
mod cluster;
mod common;
mod csv_format;
mod fuzz;
mod huawei2023;
mod node;
mod scale;
