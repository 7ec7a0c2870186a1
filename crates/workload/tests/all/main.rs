//! Integration tests of `faasched-workload`: the workload CSV, load scaling, the
//! production trace readers against hand-made fixtures, and fuzzing of every
//! reader.

mod azure2019;
mod azure2021;
mod common;
mod csv_format;
mod fuzz;
mod huawei2023;
mod scale;
