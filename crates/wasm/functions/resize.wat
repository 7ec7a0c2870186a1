;; resize: run((w << 32) | h) generates a w x h greyscale image at address 0,
;;   src[y][x] = (x * x + 3 y + x y) mod 256,
;; resizes it bilinearly to (w / 2) x (h / 2) right after it in memory, and
;; returns the 64-bit FNV-1a hash of the result's bytes in row-major order.
;; Sampling is in fixed point with 8 fraction bits: destination coordinate d
;; of a side of n source and m destination pixels maps to
;;   s = ((2 d + 1) n 256) / (2 m) - 128   (integer division, then clamped),
;; i.e. (d + 1/2) n / m - 1/2 in 1/256 units; s < 0 becomes 0 and s with
;; s / 256 >= n - 1 becomes (n - 1) 256. With c0 = s / 256, f = s mod 256,
;; c1 = min(c0 + 1, n - 1), the four neighbours blend as
;;   top = p(x0, y0) (256 - fx) + p(x1, y0) fx, bottom likewise on y1,
;;   pixel = (top (256 - fy) + bottom fy + 32768) / 65536.
;; The host keeps 2 <= w, h <= 65535 and w h <= 2^30.
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

  ;; The fixed-point source coordinate s of destination coordinate $d (above).
  (func $coord (param $d i32) (param $n i32) (param $m i32) (result i32)
    (local $s i64)
    (local.set $s
      (i64.sub
        (i64.div_u
          (i64.mul
            (i64.mul
              (i64.extend_i32_u (i32.add (i32.shl (local.get $d) (i32.const 1)) (i32.const 1)))
              (i64.extend_i32_u (local.get $n)))
            (i64.const 256))
          (i64.shl (i64.extend_i32_u (local.get $m)) (i64.const 1)))
        (i64.const 128)))
    (if (i64.lt_s (local.get $s) (i64.const 0))
      (then (local.set $s (i64.const 0))))
    (if (i64.ge_s
          (i64.shr_s (local.get $s) (i64.const 8))
          (i64.extend_i32_u (i32.sub (local.get $n) (i32.const 1))))
      (then
        (local.set $s
          (i64.shl (i64.extend_i32_u (i32.sub (local.get $n) (i32.const 1))) (i64.const 8)))))
    (i32.wrap_i64 (local.get $s)))

  ;; min(c + 1, n - 1)
  (func $next (param $c i32) (param $n i32) (result i32)
    (select
      (i32.add (local.get $c) (i32.const 1))
      (local.get $c)
      (i32.lt_u (i32.add (local.get $c) (i32.const 1)) (local.get $n))))

  (func (export "run") (param $arg i64) (result i64)
    (local $w i32) (local $h i32) (local $dw i32) (local $dh i32) (local $dst i32)
    (local $x i32) (local $y i32) (local $sx i32) (local $sy i32)
    (local $x0 i32) (local $x1 i32) (local $y0 i32) (local $y1 i32)
    (local $fx i32) (local $fy i32) (local $top i32) (local $bottom i32)
    (local $out i32) (local $i i32) (local $hash i64)
    (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $arg) (i64.const 32))))
    (local.set $h (i32.wrap_i64 (local.get $arg)))
    (local.set $dw (i32.shr_u (local.get $w) (i32.const 1)))
    (local.set $dh (i32.shr_u (local.get $h) (i32.const 1)))
    (local.set $dst (i32.mul (local.get $w) (local.get $h)))
    (call $reserve
      (i32.add (local.get $dst) (i32.mul (local.get $dw) (local.get $dh))))

    ;; Generate the source image.
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $y) (local.get $h)))
        (local.set $x (i32.const 0))
        (block $cols_done
          (loop $cols
            (br_if $cols_done (i32.ge_u (local.get $x) (local.get $w)))
            (i32.store8
              (i32.add (i32.mul (local.get $y) (local.get $w)) (local.get $x))
              (i32.add
                (i32.add
                  (i32.mul (local.get $x) (local.get $x))
                  (i32.mul (local.get $y) (i32.const 3)))
                (i32.mul (local.get $x) (local.get $y))))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br $cols)))
        (local.set $y (i32.add (local.get $y) (i32.const 1)))
        (br $rows)))

    ;; Resize, hashing each output pixel as it is written.
    (local.set $hash (i64.const 0xcbf29ce484222325))
    (local.set $out (local.get $dst))
    (local.set $y (i32.const 0))
    (block $dy_done
      (loop $dy
        (br_if $dy_done (i32.ge_u (local.get $y) (local.get $dh)))
        (local.set $sy (call $coord (local.get $y) (local.get $h) (local.get $dh)))
        (local.set $y0 (i32.shr_u (local.get $sy) (i32.const 8)))
        (local.set $fy (i32.and (local.get $sy) (i32.const 255)))
        (local.set $y1 (call $next (local.get $y0) (local.get $h)))
        (local.set $x (i32.const 0))
        (block $dx_done
          (loop $dx
            (br_if $dx_done (i32.ge_u (local.get $x) (local.get $dw)))
            (local.set $sx (call $coord (local.get $x) (local.get $w) (local.get $dw)))
            (local.set $x0 (i32.shr_u (local.get $sx) (i32.const 8)))
            (local.set $fx (i32.and (local.get $sx) (i32.const 255)))
            (local.set $x1 (call $next (local.get $x0) (local.get $w)))
            (local.set $top
              (i32.add
                (i32.mul
                  (i32.load8_u (i32.add (i32.mul (local.get $y0) (local.get $w)) (local.get $x0)))
                  (i32.sub (i32.const 256) (local.get $fx)))
                (i32.mul
                  (i32.load8_u (i32.add (i32.mul (local.get $y0) (local.get $w)) (local.get $x1)))
                  (local.get $fx))))
            (local.set $bottom
              (i32.add
                (i32.mul
                  (i32.load8_u (i32.add (i32.mul (local.get $y1) (local.get $w)) (local.get $x0)))
                  (i32.sub (i32.const 256) (local.get $fx)))
                (i32.mul
                  (i32.load8_u (i32.add (i32.mul (local.get $y1) (local.get $w)) (local.get $x1)))
                  (local.get $fx))))
            (local.set $i
              (i32.shr_u
                (i32.add
                  (i32.add
                    (i32.mul (local.get $top) (i32.sub (i32.const 256) (local.get $fy)))
                    (i32.mul (local.get $bottom) (local.get $fy)))
                  (i32.const 32768))
                (i32.const 16)))
            (i32.store8 (local.get $out) (local.get $i))
            (local.set $hash
              (i64.mul
                (i64.xor (local.get $hash) (i64.extend_i32_u (local.get $i)))
                (i64.const 0x100000001b3)))
            (local.set $out (i32.add (local.get $out) (i32.const 1)))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br $dx)))
        (local.set $y (i32.add (local.get $y) (i32.const 1)))
        (br $dy)))
    (local.get $hash)))
