# Cluster files and the two-level node/PU assignment (Boinski & Czarnul eq. 3): exact solver
# and GLPK MILP.
add_library(hlb_partition_plan OBJECT cluster.c cost_map.c plan.c plan_exact.c plan_glpk.c)
hlb_register_layer(hlb_partition_plan)
hlb_layer_link(hlb_partition_plan hlb_ext_glpk PkgConfig::CJSON ${HLB_LIBM})
