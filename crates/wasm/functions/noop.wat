;; noop: does nothing and returns 0. Measures the sandbox's fixed cost
;; (instantiation, entry, exit) with no work and no linear memory.
(module
  (func (export "run") (param $arg i64) (result i64)
    (i64.const 0)))
