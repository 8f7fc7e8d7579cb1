//! `interval` scripts print the same in both engines.

use crate::common::skip_unless_root;
use crate::compare::compare_scripts;
use std::time::Instant;

/// `interval` probes with `exit()` after a count. The kernel probe can fire again between
/// `exit()` and the detach (as in bpftrace; more likely on a loaded machine), which the
/// userspace engine, stopping at once, never does: each probe's predicate makes such a late
/// tick change nothing.
#[test]
fn interval_scripts_print_the_same_in_both_engines() {
    if skip_unless_root("interval_scripts_print_the_same_in_both_engines") {
        return;
    }
    let scripts: &[(&str, i32)] = &[
        (
            r#"interval:ms:20 /@n < 5/ { @n++; printf("tick %d\n", @n); if (@n == 5) { exit(); } }
END { printf("end %d\n", @n); }"#,
            0,
        ),
        (
            r#"BEGIN { @base = -3; @name = "start"; }
interval:ms:25 /@n < 4/ {
  @ticks = count();
  @n++;
  @h = hist(@n * 1000 + @base);
  @l = lhist(@n * 7 - 20, -20, 20, 5);
  @s = stats(@n - 10);
  @a[@n % 2] = avg(@n * -5);
  @mn = min(-@n); @mx = max(@n << 40);
  if (@n == 3) { print(@h); print(@s); clear(@l); zero(@a); }
  if (@n == 4) { @name = "four"; exit(3); }
}"#,
            3,
        ),
        (
            r#"interval:hz:40 /@n < 6/ {
  @k[@n % 3 == 0 ? "fizz" : "other", @n] = @n * 16 + @n;
  @n++;
  if (@n == 6) {
    print(@k, 2);
    printf("len %d has %d %d\n", len(@k), has_key(@k, ("fizz", 3)), has_key(@k, ("fizz", 4)));
    printf("deleted %d\n", delete(@k, ("other", 1)));
    $sum = 0; $c = 0;
    for ($kv : @k) { $sum += $kv.1; $c++; }
    printf("sum %d over %d\n", $sum, $c);
    exit();
  }
}"#,
            0,
        ),
        (
            r#"BEGIN { printf("%-6s|%6s|\n", "begin", "here"); }
interval:ms:20 /@i < 4/ {
  @i++;
  for ($j : 0..@i) { @sq[$j] = $j * $j * 16 + $j; }
  $t = (@i, "tick", (int8)-@i);
  print($t);
  printf("%08x %-5d %u %lld %c\n", @i << 28, -@i, (uint32)-@i, (int64)@i << 62, 64 + @i);
  if (@i >= 4) { exit(); }
}
END { print(@sq, 3); clear(@sq); printf("bye\n"); }"#,
            0,
        ),
        (
            r#"i:25ms /@n <= 4/ {
  @s[@n] = "s";
  @str = @n % 2 == 0 ? "even" : "odd";
  if (@str == "even") { @evens = count(); }
  @n++;
  if (@n > 4) { printf("%s %d %d\n", @str, strncmp(@str, "oddity", 3), @n); exit(); }
}"#,
            0,
        ),
    ];
    let start = Instant::now();
    compare_scripts("interval scripts", scripts, true, &[]);
    eprintln!(
        "{} interval scripts in {:.1?}",
        scripts.len(),
        start.elapsed()
    );
}
