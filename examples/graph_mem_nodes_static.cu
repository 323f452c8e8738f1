// graph_mem_nodes_static: graph_mem_nodes built with nvcc's default, the
// *static* CUDA runtime, for CUDA_INJECTION64_PATH alone (the case injection
// is for). The tool sees the program only through the driver: the graph
// calls arrive as cuGraphAddMemAllocNode, cuGraphInstantiate*, cuGraphLaunch
// and the captured allocation as cuMemAllocAsync, so its report names
// "graph-mem-node" and "cuMemAllocAsync(captured)"; expectations otherwise
// as in graph_mem_nodes.cu.
#include "graph_mem_nodes.cu"
