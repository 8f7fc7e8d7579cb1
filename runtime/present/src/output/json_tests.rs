//! Golden tests for the JSON printer; every expected line was printed by
//! `bpftrace -f json` 0.17 for the script in the comment above it, except where bpftrace
//! 0.26 writes otherwise (its messages are sonde's reference): `attached_probes` and
//! `lost_events` carry a `count`, bucket lists have no spaces between buckets, and `cat`,
//! `join`, `syscall` and `helper_error` are 0.26's messages (its `tests/runtime/json-output`).

use super::super::{MapDump, NoResolver, PrintOpts, Printer};
use super::*;

fn s(x: &str) -> Value {
    Value::Str(x.as_bytes().to_vec())
}

fn render(f: impl FnOnce(&mut JsonPrinter<Vec<u8>, NoResolver>) -> io::Result<()>) -> String {
    let mut p = JsonPrinter::new(Vec::new(), NoResolver);
    f(&mut p).unwrap();
    String::from_utf8(p.into_inner()).unwrap()
}

fn one(name: &str, ty: Type, entries: Vec<(Value, Value)>) -> String {
    render(|p| {
        p.map(
            &MapDump {
                name: name.into(),
                value_type: ty,
                entries,
            },
            PrintOpts::default(),
        )
    })
}

fn hist(values: &[i64]) -> Value {
    Value::Agg(crate::output::testing::hist(values))
}

#[test]
fn events() {
    // printf("hi %d\n", 5); print(5); print("x"); print((1,"a")); time("%H\n")
    let out = render(|p| {
        p.attached(1)?;
        p.printf(b"hi 5\n")?;
        p.value(&Value::Int(5))?;
        p.value(&s("x"))?;
        p.value(&Value::Tuple(vec![Value::Int(1), s("a")]))?;
        p.time(b"00\n")
    });
    assert_eq!(
        out,
        "{\"type\": \"attached_probes\", \"count\": 1, \"data\": {\"probes\": 1}}\n\
         {\"type\": \"printf\", \"data\": \"hi 5\\n\"}\n\
         {\"type\": \"value\", \"data\": 5}\n\
         {\"type\": \"value\", \"data\": \"x\"}\n\
         {\"type\": \"value\", \"data\": [1,\"a\"]}\n\
         {\"type\": \"time\", \"data\": \"00\\n\"}\n"
    );
}

#[test]
fn escapes() {
    // printf("q\"uo\\te\t\x01") and printf("\r\x08\x0c\x1f\x7f/<>~\n")
    assert_eq!(
        json_string(b"q\"uo\\te\t\x01"),
        "\"q\\\"uo\\\\te\\t\\u0001\""
    );
    assert_eq!(
        json_string(b"\r\x08\x0c\x1f\x7f/<>~\n"),
        "\"\\r\\u0008\\u000c\\u001f\x7f/<>~\\n\""
    );
    assert_eq!(json_string("é".as_bytes()), "\"é\"");
    assert_eq!(json_string(&[0xff]), "\"\\u00ff\"");
}

#[test]
fn plain_maps() {
    // @a = count(); @b[1]=count(); @b[2]=count(); @ks["x",2] = 5; @t=(1,"a",(2,"b")); @s="str"
    let c = |n| Value::Agg(AggValue::Count(n));
    assert_eq!(
        one("a", Type::Agg(AggKind::Count), vec![(Value::None, c(1))]),
        "{\"type\": \"map\", \"data\": {\"@a\": 1}}\n"
    );
    assert_eq!(
        one(
            "b",
            Type::Agg(AggKind::Count),
            vec![(Value::Int(1), c(1)), (Value::Int(2), c(1))]
        ),
        "{\"type\": \"map\", \"data\": {\"@b\": {\"1\": 1, \"2\": 1}}}\n"
    );
    let key = Value::Tuple(vec![s("x"), Value::Int(2)]);
    assert_eq!(
        one("ks", Type::I64, vec![(key, Value::Int(5))]),
        "{\"type\": \"map\", \"data\": {\"@ks\": {\"x,2\": 5}}}\n"
    );
    let t = Value::Tuple(vec![
        Value::Int(1),
        s("a"),
        Value::Tuple(vec![Value::Int(2), s("b")]),
    ]);
    assert_eq!(
        one("t", Type::Void, vec![(Value::None, t)]),
        "{\"type\": \"map\", \"data\": {\"@t\": [1,\"a\",[2,\"b\"]]}}\n"
    );
    assert_eq!(
        one("s", Type::Str { size: 8 }, vec![(Value::None, s("str"))]),
        "{\"type\": \"map\", \"data\": {\"@s\": \"str\"}}\n"
    );
    assert_eq!(one("e", Type::I64, vec![]), "");
}

#[test]
fn stats_maps() {
    // @av=avg(4); @kav[1]=avg(4); @st=stats(5); @kst["a"]=stats(3)
    let avg = Value::Agg(AggValue::Avg {
        sum: 4,
        count: 1,
        signed: true,
    });
    let ty = Type::Agg(AggKind::Avg { signed: true });
    assert_eq!(
        one("av", ty.clone(), vec![(Value::None, avg.clone())]),
        "{\"type\": \"stats\", \"data\": {\"@av\": 4}}\n"
    );
    assert_eq!(
        one("kav", ty, vec![(Value::Int(1), avg)]),
        "{\"type\": \"stats\", \"data\": {\"@kav\": {\"1\": 4}}}\n"
    );
    let st = |n| {
        Value::Agg(AggValue::Stats {
            count: 1,
            sum: n,
            signed: true,
        })
    };
    let ty = Type::Agg(AggKind::Stats { signed: true });
    assert_eq!(
        one("st", ty.clone(), vec![(Value::None, st(5))]),
        "{\"type\": \"stats\", \"data\": {\"@st\": {\"count\": 1, \"average\": 5, \"total\": 5}}}\n"
    );
    assert_eq!(
        one("kst", ty, vec![(s("a"), st(3))]),
        "{\"type\": \"stats\", \"data\": {\"@kst\": {\"a\": {\"count\": 1, \"average\": 3, \"total\": 3}}}}\n"
    );
}

#[test]
fn empty_maps_print_nothing_but_stats_an_empty_object() {
    // bpftrace 0.26's JsonOutput::map: an empty map prints nothing, an empty avg/stats map
    // its (empty) entries as an object.
    assert_eq!(one("e", Type::I64, vec![]), "");
    assert_eq!(one("h", Type::Agg(AggKind::Hist { bits: 0 }), vec![]), "");
    assert_eq!(
        one("a", Type::Agg(AggKind::Avg { signed: true }), vec![]),
        "{\"type\": \"stats\", \"data\": {\"@a\": {}}}\n"
    );
}

#[test]
fn histograms() {
    // @h=hist(5); @h=hist(100); @kh[1]=hist(5); @kh[2]=hist(-1)
    let ty = Type::Agg(AggKind::Hist { bits: 0 });
    assert_eq!(
        one("h", ty.clone(), vec![(Value::None, hist(&[5, 100]))]),
        "{\"type\": \"hist\", \"data\": {\"@h\": [{\"min\": 4, \"max\": 7, \"count\": 1},{\"min\": 8, \"max\": 15, \"count\": 0},{\"min\": 16, \"max\": 31, \"count\": 0},{\"min\": 32, \"max\": 63, \"count\": 0},{\"min\": 64, \"max\": 127, \"count\": 1}]}}\n"
    );
    assert_eq!(
        one(
            "kh",
            ty.clone(),
            vec![(Value::Int(1), hist(&[5])), (Value::Int(2), hist(&[-1]))]
        ),
        "{\"type\": \"hist\", \"data\": {\"@kh\": {\"1\": [{\"min\": 4, \"max\": 7, \"count\": 1}], \"2\": [{\"max\": -1, \"count\": 1}]}}}\n"
    );
    // @h=hist(0); @h=hist(1); @h=hist(-5)
    assert_eq!(
        one("h", ty, vec![(Value::None, hist(&[0, 1, -5]))]),
        "{\"type\": \"hist\", \"data\": {\"@h\": [{\"max\": -1, \"count\": 1},{\"min\": 0, \"max\": 0, \"count\": 1},{\"min\": 1, \"max\": 1, \"count\": 1}]}}\n"
    );
    // @y = lhist(3, 1024, 4096, 1024); @l=lhist(100,0,100,10) (overflow bucket)
    let l = Value::Agg(AggValue::Lhist {
        min: 1024,
        max: 4096,
        step: 1024,
        buckets: vec![1, 0, 0, 0, 0],
        sum: 0,
    });
    let ty = Type::Agg(AggKind::Lhist {
        min: 1024,
        max: 4096,
        step: 1024,
    });
    assert_eq!(
        one("y", ty, vec![(Value::None, l)]),
        "{\"type\": \"hist\", \"data\": {\"@y\": [{\"max\": 1023, \"count\": 1}]}}\n"
    );
    let mut buckets = vec![0; 12];
    buckets[11] = 2;
    let l = Value::Agg(AggValue::Lhist {
        min: 0,
        max: 100,
        step: 10,
        buckets,
        sum: 0,
    });
    let ty = Type::Agg(AggKind::Lhist {
        min: 0,
        max: 100,
        step: 10,
    });
    assert_eq!(
        one("l", ty, vec![(Value::None, l)]),
        "{\"type\": \"hist\", \"data\": {\"@l\": [{\"min\": 100, \"count\": 2}]}}\n"
    );
}

#[test]
fn messages_of_bpftrace_0_26() {
    // cat("/proc/uptime"); join(argv, ","); system("echo a b c"); lost events; exit maps
    let out = render(|p| {
        p.cat(b"1.0 2.0\n")?;
        p.join(b"/bin/echo,'A'")?;
        p.syscall(b"a b c\n")?;
        p.counts(
            crate::output::Counts {
                lost_events: 7,
                ..Default::default()
            },
            4096,
        )?;
        p.exit_maps_start()
    });
    assert_eq!(
        out,
        "{\"type\": \"cat\", \"data\": \"1.0 2.0\\n\"}\n\
         {\"type\": \"join\", \"data\": \"/bin/echo,'A'\"}\n\
         {\"type\": \"syscall\", \"data\": \"a b c\\n\"}\n\
         {\"type\": \"lost_events\", \"count\": 7, \"data\": {\"events\": 7}}\n"
    );
}

#[test]
fn helper_errors() {
    // -k: struct foo {int a;} BEGIN { $tmp = ((struct foo*) 0)->a; }
    let src = "struct foo {int a;} BEGIN { $tmp = ((struct foo*) 0)->a; }";
    sonde_system::warnings::set_script("stdin", src);
    let start = src.find("((").unwrap();
    let out = render(|p| {
        p.helper_error(
            "probe_read",
            -14,
            sonde_lang::span::Span::new(start, start + 20),
        )
    });
    assert_eq!(
        out,
        "{\"type\": \"helper_error\", \"msg\": \"Bad address\", \"helper\": \"probe_read\", \"retcode\": -14, \"filename\": \"stdin\", \"line\": 1, \"col\": 36}\n"
    );
}

#[test]
fn address_map_losses_are_records() {
    let out = render(|p| {
        p.counts(
            crate::output::Counts {
                maps_lost: 3,
                maps_evicted: 2,
                ..Default::default()
            },
            4096,
        )
    });
    assert_eq!(
        out,
        format!(
            "{{\"type\": \"lost_address_maps\", \"data\": {{\"records\": 3}}}}\n\
             {{\"type\": \"address_maps_dropped\", \"data\": {{\"processes\": 2, \"limit\": {}}}}}\n",
            sonde_system::symbols::procmaps::MAX_EXITED_KEPT
        )
    );
}
