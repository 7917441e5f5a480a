# cmake -DIN=a2a.proto -DOUT=dir/a2a.proto -P proto3_optional.cmake
#
# Debian 12's protoc-c (protobuf-c 1.4.1) refuses proto3 `optional`. On
# the wire and in ProtoJSON such a field is a member of a oneof of its own
# (protoc itself calls it the synthetic oneof "_name"), so the copy handed
# to protoc-c says exactly that: `optional T name = N;` becomes
# `oneof _name { T name = N; }`. Names, numbers and types are unchanged.
file(READ ${IN} text)
string(REGEX REPLACE "optional ([A-Za-z0-9_.]+) ([a-z0-9_]+) = ([0-9]+);"
       "oneof _\\2 { \\1 \\2 = \\3; }" text "${text}")
file(WRITE ${OUT}.tmp "${text}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
