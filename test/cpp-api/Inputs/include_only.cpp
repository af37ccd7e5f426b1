// Compiled with only the installed include directory on the path
// (install.test), in C++17 with and without exceptions: ein/ein.h stands
// alone.
#include <ein/ein.h>

int main() {
  ein::Result<ein::Tensor> t = ein::nothrow::zeros(ein::f32, {2, 3});
  return t.has_value() ? 0 : 1;
}
