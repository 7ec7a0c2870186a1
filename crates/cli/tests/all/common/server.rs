//! A `faasched` server process for the tests that talk HTTP to one (`node
//! serve`, `cluster gateway`): started on a loopback port it prints (on
//! stderr for people, or as the JSON line a `node serve --config` prints
//! on stdout), stopped by SIGTERM, killed if a test fails first; and a
//! bare HTTP/1.1 client, so that what goes on the wire is what the test
//! wrote.

use faasched_sys::process;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a test waits for a server to listen or to answer.
pub const CAP: Duration = Duration::from_secs(120);

/// A running `faasched` server.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it printed on stderr before the line with its address.
    pub preamble: Vec<String>,
    stderr: BufReader<std::process::ChildStderr>,
}

impl Server {
    /// Runs `faasched ARGS` and reads the address it listens on from the
    /// first line on its stderr that says `listening on ADDR`.
    pub fn start(args: &[&str]) -> Server {
        Server::spawn(Command::new(env!("CARGO_BIN_EXE_faasched")).args(args))
    }

    /// [`Server::start`] in network namespace `netns` (`ip netns exec`,
    /// which execs the binary: the child is the server itself).
    pub fn start_in(netns: &str, args: &[&str]) -> Server {
        Server::spawn(
            Command::new("ip")
                .args(["netns", "exec", netns, env!("CARGO_BIN_EXE_faasched")])
                .args(args),
        )
    }

    fn spawn(command: &mut Command) -> Server {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut preamble = Vec::new();
        let addr = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("no address in {preamble:?}");
            }
            match line.split("listening on ").nth(1) {
                Some(rest) => break rest.split_whitespace().next().unwrap().parse().unwrap(),
                None => preamble.push(line.trim_end().to_string()),
            }
        };
        Server {
            child,
            addr,
            preamble,
            stderr,
        }
    }

    /// Runs `faasched node serve --config -` with `config` on its stdin
    /// and reads the address it listens on from the readiness line on its
    /// stdout, which must be JSON: `{"listening":"HOST:PORT"}`.
    pub fn configured(config: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_faasched"))
            .args(["node", "serve", "--config", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(config.as_bytes())
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("readiness line {line:?}: {e}"));
        let addr = ready["listening"].as_str().expect("an address").parse();
        Server {
            child,
            addr: addr.unwrap_or_else(|e| panic!("{ready}: {e}")),
            preamble: Vec::new(),
            stderr,
        }
    }

    /// A kept-alive connection to it.
    pub fn connect(&self) -> Client {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(CAP)).unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Sends SIGTERM; the exit status and the rest of stderr.
    pub fn stop(mut self) -> (bool, String) {
        let pidfd = process::pidfd_open(self.child.id() as libc::pid_t).unwrap();
        process::signal(&pidfd, libc::SIGTERM).unwrap();
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        (status.success(), rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `faasched node serve` as a cluster's node: FunctionBench's functions
/// in containers at a thousandth of their times, 1 GB for them, its load
/// published every 20 ms.
pub fn cluster_node() -> Server {
    cluster_node_with(&[])
}

/// [`cluster_node`] with `extra` arguments.
pub fn cluster_node_with(extra: &[&str]) -> Server {
    let mut args = vec![
        "node",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--load-period-ms",
        "20",
        "--memory-mb",
        "1024",
        "--functions",
        "functionbench",
        "--time-scale",
        "0.001",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// An answer: status, the headers (lower-cased names), the body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One kept-alive HTTP/1.1 connection.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    /// Sends a request without waiting for its answer.
    pub fn send(&mut self, method: &str, path: &str, body: &[u8]) {
        self.send_with(method, path, &[], body);
    }

    /// Sends a request with `headers` without waiting for its answer.
    pub fn send_with(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        self.writer.write_all(head.as_bytes()).unwrap();
        self.writer.write_all(body).unwrap();
    }

    /// Reads the next answer.
    pub fn receive(&mut self) -> Answer {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
        }
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        Answer {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    /// Sends a request and reads its answer.
    pub fn call(&mut self, method: &str, path: &str, body: &[u8]) -> Answer {
        self.send(method, path, body);
        self.receive()
    }
}

/// One request with `headers` on a connection of its own.
pub fn call(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(CAP)).unwrap();
    let mut client = Client {
        reader: BufReader::new(stream.try_clone().unwrap()),
        writer: stream,
    };
    client.send_with(method, path, headers, b"");
    client.receive()
}
