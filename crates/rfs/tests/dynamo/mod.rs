//! Shared helpers of the DynamoDB table tests: credentials for the `rfs` processes, and the
//! official AWS SDK for Rust (`testkit::dynamo_sdk`, an independent client, never the
//! sink's code) pointed at the test's dynalite, to read back and to tamper with what
//! `rfs table run` wrote. Values are compared as DynamoDB means them: numbers by value,
//! everything else exactly.
#![allow(dead_code, unused_imports)]

use std::process::Command;

pub use testkit::dynamo_sdk::{assert_item, b, decimal, json_av, n, s, same, Av, Sdk, SdkItem};

pub const ACCESS_KEY: &str = "AKIDRFSTABLETEST";
/// Must never show in anything rfs prints or writes.
pub const SECRET: &str = "rfs-table-test-SECRET-wJalrXUtnFEMI";

/// The AWS environment of an `rfs` process: static keys, no profile or config file of the
/// machine's user.
pub fn aws_env(c: &mut Command) {
    c.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        .env("AWS_CONFIG_FILE", "/nonexistent/config");
}
