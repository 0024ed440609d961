# Repartition policies for SPMD codes (include/hlb/repartition.h): pure, no MPI.
add_library(hlb_repart OBJECT repart_registry.c repart_common.c repart_none.c repart_flex.c
                              repart_model.c repart_ccp.c repart_hlb.c)
hlb_register_layer(hlb_repart)
hlb_layer_link(hlb_repart ${HLB_LIBM})
