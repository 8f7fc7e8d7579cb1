//! A small seeded generator (xorshift64*) for the tests that generate scripts and inputs.

/// xorshift64*: small, seeded, good enough to pick among alternatives.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (nearby seeds diverge at once).
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d).max(1));
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    /// A count in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `n / d`.
    pub fn chance(&mut self, n: u64, d: u64) -> bool {
        self.next() % d < n
    }

    /// One of `xs`.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// A byte that is not UTF-8 on its own.
    pub fn high_byte(&mut self) -> u8 {
        0x80 + self.below(0x80) as u8
    }
}
