package cri

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Field numbers of runtime.v1's ListPodSandboxResponse and PodSandbox, and
// of a map entry.
const (
	listItemsField     = 1
	sandboxStateField  = 3
	sandboxLabelsField = 5
	mapKeyField        = 1
	mapValueField      = 2
)

// onlySandboxesOf is a call option for ListPodSandbox: the answer keeps
// only the sandboxes whose pod UID label keep accepts, each with its state
// and that label alone. The poller's node-wide list carries every sandbox
// of the node with its labels and annotations, 20 times a second through a
// burst, and it wants to know only which of the waiting pods have a READY
// one: decoding each sandbox whole was a tenth of what the agent
// allocated in a burst.
func onlySandboxesOf(keep func(uid []byte) bool) grpc.CallOption {
	return grpc.ForceCodecV2(sandboxFilterCodec{unpooledCodec: unpooledCodec{encoding.GetCodecV2(proto.Name)}, keep: keep})
}

// sandboxFilterCodec is unpooledCodec that reads a ListPodSandbox answer
// through readSandboxes.
type sandboxFilterCodec struct {
	unpooledCodec
	keep func(uid []byte) bool
}

func (c sandboxFilterCodec) Unmarshal(data mem.BufferSlice, v any) error {
	resp, ok := v.(*runtimeapi.ListPodSandboxResponse)
	if !ok {
		return c.unpooledCodec.Unmarshal(data, v)
	}
	items, err := readSandboxes(data.Materialize(), c.keep)
	resp.Items = items
	return err
}

// readSandboxes reads the sandboxes of a ListPodSandboxResponse in wire
// form whose pod UID label keep accepts: their state and that label.
func readSandboxes(b []byte, keep func(uid []byte) bool) ([]*runtimeapi.PodSandbox, error) {
	var out []*runtimeapi.PodSandbox
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte, varint uint64) error {
		if num != listItemsField || typ != protowire.BytesType {
			return nil
		}
		var uid []byte
		var state runtimeapi.PodSandboxState
		err := walkFields(v, func(num protowire.Number, typ protowire.Type, v []byte, varint uint64) error {
			switch {
			case num == sandboxStateField && typ == protowire.VarintType:
				state = runtimeapi.PodSandboxState(varint)
			case num == sandboxLabelsField && typ == protowire.BytesType:
				var key, value []byte
				err := walkFields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
					if typ == protowire.BytesType && num == mapKeyField {
						key = v
					} else if typ == protowire.BytesType && num == mapValueField {
						value = v
					}
					return nil
				})
				if err != nil {
					return err
				}
				if string(key) == PodUIDLabel {
					uid = value
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if uid != nil && keep(uid) {
			out = append(out, &runtimeapi.PodSandbox{State: state, Labels: map[string]string{PodUIDLabel: string(uid)}})
		}
		return nil
	})
	return out, err
}

// walkFields calls f with each field of a protobuf message in wire form:
// its value's bytes for a length-delimited field, its value for a varint.
func walkFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, varint uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("sandbox list: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var varint uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			varint, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("sandbox list: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, varint); err != nil {
			return err
		}
	}
	return nil
}
