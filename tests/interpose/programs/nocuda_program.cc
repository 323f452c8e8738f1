// Never touches CUDA (not even linked to it): the tool must stay silent.
#include <cstdio>
#include <cstdlib>

int main() {
  void* p = std::malloc(100);
  std::printf("hello %s\n", p ? "world" : "?");
  std::free(p);
  return 0;
}
