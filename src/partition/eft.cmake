# Equal-finish-time solvers (PLB-HeC III.C): continuous (eft.c), integer (eft_int.c), and the
# per-curve checks and inverse they share (eft_curve.c).
add_library(hlb_partition_eft OBJECT ${CMAKE_CURRENT_LIST_DIR}/eft.c
                                     ${CMAKE_CURRENT_LIST_DIR}/eft_curve.c
                                     ${CMAKE_CURRENT_LIST_DIR}/eft_int.c)
hlb_register_layer(hlb_partition_eft)
hlb_layer_link(hlb_partition_eft ${HLB_LIBM})
