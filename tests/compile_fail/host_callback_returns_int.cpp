// expect: ThenDoHostCallback takes a callable returning void or se::Status
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream) {
  stream.ThenDoHostCallback([] { return 1; });  // an int would be dropped: refused at compile time
}
