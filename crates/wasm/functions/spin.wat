;; spin: run(n) steps a 64-bit linear congruential generator n times from 0
;; (x = x * 6364136223846793005 + 1442695040888963407, wrapping) and returns x.
;; Each step depends on the one before, so the loop cannot be shortened: the
;; runtime calibrates steps per microsecond once at start for `spin?us=N`.
(module
  (func (export "run") (param $n i64) (result i64)
    (local $x i64)
    (block $done
      (loop $next
        (br_if $done (i64.le_s (local.get $n) (i64.const 0)))
        (local.set $x
          (i64.add
            (i64.mul (local.get $x) (i64.const 6364136223846793005))
            (i64.const 1442695040888963407)))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $next)))
    (local.get $x)))
