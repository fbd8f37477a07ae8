//! `stele serve`: prints its URL, answers, and stops cleanly on Ctrl-C (SIGINT).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

#[allow(dead_code, reason = "each test file uses some of the helpers")]
use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn serve_prints_its_url_answers_and_stops_on_ctrl_c() {
    let (_dir, db) = common::shop_with_orders();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stele"))
        .arg("serve")
        .arg(&db)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("at http://127.0.0.1:"), "{line}");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let mut conn = TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(b"GET /.json HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    assert!(answer.contains("\"orders\""), "{answer}");
    // SAFETY: kill(2) with the id of a child this test started and still owns.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped"));
}

#[test]
fn serve_refuses_a_folder_without_a_database() {
    let dir = tempfile::tempdir().unwrap();
    common::stele()
        .arg("serve")
        .arg(dir.path().join("none"))
        .args(["--port", "0"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("error:"));
}
