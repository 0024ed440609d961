# 1-D chains-on-chains partitioning, diffusive refinement, weight estimation and imbalance
# metrics (Issakhov et al.). Public header: include/hlb/ccp.h.
add_library(hlb_partition_ccp OBJECT
  ${CMAKE_CURRENT_LIST_DIR}/ccp.c
  ${CMAKE_CURRENT_LIST_DIR}/ccp_loads.c
  ${CMAKE_CURRENT_LIST_DIR}/diffusive.c
  ${CMAKE_CURRENT_LIST_DIR}/weights.c
  ${CMAKE_CURRENT_LIST_DIR}/imbalance.c)
hlb_register_layer(hlb_partition_ccp)
hlb_layer_link(hlb_partition_ccp PkgConfig::LAPACKE ${HLB_LIBM})
