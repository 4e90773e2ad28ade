; A hand-written PLENA kernel that exercises every timing class (tests/targets/plena/test_timing.py).
; HBM: W (64 x 64, MXFP8) at byte 0, scales from 4096; X (4 x 64) at byte 8192, scales from 8448.
S_ADDI_INT gp1, gp0, 4096
C_SET_SCALE_REG gp1
H_PREFETCH_M gp0, gp0, a0, 0, 0        ; W -> MRAM tile 0: 64 rows x (1 element + 1 scale block)
S_LUI_INT gp3, 2                       ; 8192
C_SET_ADDR_REG a1, gp0, gp3
S_ADDI_INT gp1, gp0, 256
C_SET_SCALE_REG gp1
S_ADDI_INT gp4, gp0, 64                ; X -> VRAM rows 1..4
H_PREFETCH_V gp4, gp0, a1, 0, 0
V_ADD_VV gp4, gp4, gp0, 0              ; hazard: reads a row the prefetch just wrote
S_ADDI_INT gp5, gp0, 1024              ; Y = X @ W into VRAM rows 16..19
S_ADDI_INT gp6, gp0, 0
C_LOOP_START gp7, 16
M_MM 0, gp6, gp4
M_MM_WO gp5, gp0, 0
S_ADDI_INT gp6, gp6, 256               ; next BLEN-column slice (c * MLEN)
S_ADDI_INT gp5, gp5, 4
C_LOOP_END gp7
M_TMM 0, gp4, gp0
M_MM_WO gp5, gp0, 0                    ; row 17, columns 0..4
M_MV 0, gp0, gp4
M_MV_WO gp5, 4
M_BTMM 0, gp0, gp0                     ; head-batched: extrapolated in rtl
S_LUI_INT gp8, 1                       ; 4096: VRAM rows 64..319
M_BMM_WO gp8, 0
S_LD_FP f1, gp0, 0
V_RED_MAX f1, gp4, 0
S_SUB_FP f2, f1, f1                    ; hazard: reads the reduction's register
S_EXP_FP f3, f2
V_MUL_VF gp4, gp4, f3, 0               ; hazard: broadcasts the SFU result
V_MUL_VF gp4, gp4, f3, 0               ; hazard: writes the same VRAM row again
S_ADDI_INT gp9, gp0, 9
C_SET_V_MASK_REG gp9                   ; lanes 0 and 3
V_ADD_VF gp4, gp4, f1, 1
S_ADDI_INT gp12, gp0, 2048             ; scratch rows 32 and 33
S_ADDI_INT gp13, gp0, 2112
V_EXP_V gp12, gp4, 0
V_RECI_V gp13, gp12, 0
V_SUB_VF gp12, gp13, f1, 0, 1
V_MAX_VF gp13, gp12, f0, 0
V_MIN_VF gp12, gp13, f1, 0
V_SHFT_V gp13, gp12, gp9
V_RED_SUM f4, gp4
S_RECI_FP f4, f4                       ; hazard: reads the reduction's register
S_MUL_FP f5, f4, f4
S_SQRT_FP f5, f5
S_ADD_FP f5, f5, f4
S_MAX_FP f6, f5, f4
S_ST_FP f5, gp0, 1
S_ADDI_INT gp10, gp0, 128
S_MAP_V_FP gp10, gp0, 0
S_ST_INT gp9, gp0, 0
S_LD_INT gp11, gp0, 0
S_MUL_INT gp11, gp11, gp9
S_SUB_INT gp11, gp11, gp9
S_ADD_INT gp11, gp11, gp9
H_STORE_V gp4, gp0, a1, 0, 0
