;; fib: run(n) = fib(n) mod 2^64, iteratively (fib(0) = 0, fib(1) = 1).
;; Pure register work: no linear memory.
(module
  (func (export "run") (param $n i64) (result i64)
    (local $a i64) (local $b i64) (local $t i64)
    (local.set $b (i64.const 1))
    (block $done
      (loop $next
        (br_if $done (i64.le_s (local.get $n) (i64.const 0)))
        (local.set $t (i64.add (local.get $a) (local.get $b)))
        (local.set $a (local.get $b))
        (local.set $b (local.get $t))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $next)))
    (local.get $a)))
