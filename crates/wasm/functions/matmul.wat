;; matmul: run(n) multiplies two generated n x n f64 matrices, C = A B, with
;;   A[i][j] = ((i * n + j) mod 13) * 0.5,   B[i][j] = ((i + 2 j) mod 11) - 5,
;;   C[i][j] = sum over k = 0, 1, ..., n - 1 of A[i][k] B[k][j] (in that order),
;; all row-major at address 0 (A, then B, then C; 24 n^2 bytes), and returns
;; h over C in row-major order, h = h * 31 + bits(C[i][j]) from h = 0, wrapping.
;; The host keeps 1 <= n <= 8192.
(module
  (memory (export "memory") 1)

  ;; Grows memory so that addresses [0, bytes) exist; traps if it cannot.
  (func $reserve (param $bytes i32)
    (local $need i32)
    (local.set $need
      (i32.sub
        (i32.shr_u (i32.add (local.get $bytes) (i32.const 65535)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then
        (if (i32.eq (memory.grow (local.get $need)) (i32.const -1))
          (then unreachable)))))

  (func (export "run") (param $arg i64) (result i64)
    (local $n i32) (local $size i32) (local $b i32) (local $c i32)
    (local $i i32) (local $j i32) (local $k i32)
    (local $sum f64) (local $h i64)
    (local.set $n (i32.wrap_i64 (local.get $arg)))
    ;; size = bytes of one matrix
    (local.set $size (i32.shl (i32.mul (local.get $n) (local.get $n)) (i32.const 3)))
    (local.set $b (local.get $size))
    (local.set $c (i32.shl (local.get $size) (i32.const 1)))
    (call $reserve (i32.add (local.get $c) (local.get $size)))

    ;; Generate A and B.
    (local.set $i (i32.const 0))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $j (i32.const 0))
        (block $cols_done
          (loop $cols
            (br_if $cols_done (i32.ge_u (local.get $j) (local.get $n)))
            (f64.store
              (i32.shl
                (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j))
                (i32.const 3))
              (f64.mul
                (f64.convert_i32_u
                  (i32.rem_u
                    (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j))
                    (i32.const 13)))
                (f64.const 0.5)))
            (f64.store
              (i32.add (local.get $b)
                (i32.shl
                  (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j))
                  (i32.const 3)))
              (f64.sub
                (f64.convert_i32_u
                  (i32.rem_u
                    (i32.add (local.get $i) (i32.shl (local.get $j) (i32.const 1)))
                    (i32.const 11)))
                (f64.const 5)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $cols)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows)))

    ;; C = A B, and the checksum over C in the same row-major pass.
    (local.set $i (i32.const 0))
    (block $i_done
      (loop $i_loop
        (br_if $i_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $j (i32.const 0))
        (block $j_done
          (loop $j_loop
            (br_if $j_done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $sum (f64.const 0))
            (local.set $k (i32.const 0))
            (block $k_done
              (loop $k_loop
                (br_if $k_done (i32.ge_u (local.get $k) (local.get $n)))
                (local.set $sum
                  (f64.add (local.get $sum)
                    (f64.mul
                      (f64.load
                        (i32.shl
                          (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $k))
                          (i32.const 3)))
                      (f64.load
                        (i32.add (local.get $b)
                          (i32.shl
                            (i32.add (i32.mul (local.get $k) (local.get $n)) (local.get $j))
                            (i32.const 3)))))))
                (local.set $k (i32.add (local.get $k) (i32.const 1)))
                (br $k_loop)))
            (f64.store
              (i32.add (local.get $c)
                (i32.shl
                  (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j))
                  (i32.const 3)))
              (local.get $sum))
            (local.set $h
              (i64.add
                (i64.mul (local.get $h) (i64.const 31))
                (i64.reinterpret_f64 (local.get $sum))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $j_loop)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $i_loop)))
    (local.get $h)))
